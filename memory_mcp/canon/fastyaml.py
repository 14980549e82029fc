"""Read frontmatter with libyaml, giving exactly what ruamel.yaml's round-trip loader gives.

Why: ruamel.yaml is pure Python and parsing was ~90% of a cold index (about 5 ms of YAML per file).
PyYAML (already installed with python-frontmatter) carries libyaml, a C scanner/parser ~20x faster.
The two must never disagree on what a file says, so only the *structure* comes from libyaml:

- plain scalars are resolved with ruamel's own YAML 1.2 resolver table (PyYAML would resolve YAML
  1.1: `no` → False, `012` → 10);
- non-string scalars are built by ruamel's own round-trip constructor methods;
- anything outside the common case gets `None` back, and the caller reads the file with ruamel as
  before: anchors, aliases, tags, directives, block scalars (any of `& * ! % | >` in the text), tabs,
  control characters and exotic spaces or line breaks, merge keys, duplicate keys, non-scalar keys, a
  top level that is not a mapping, and any error libyaml reports or a constructor raises (the message a
  person sees is always ruamel's). Each of these rules was found by the differential fuzz test.

tests/test_canon_fastyaml.py checks the two readers against each other on generated frontmatter.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml import nodes as rnodes
from ruamel.yaml.resolver import implicit_resolvers

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_FALLBACK_CHARS = frozenset("&*!%\t")  # anchors, aliases, tags, directives and tabs: the parsers differ there
# where `|` or `>` can open a block scalar (ruamel refuses some that libyaml takes): first on a line, after a
# sequence dash or a key's colon. Anywhere else they are plain characters (`origin: sync from Ana <a@x>`)
_BLOCK_SCALAR = re.compile(r"(?m)(?:^[ ]*(?:-[ ]+)*|[:?-][ ]+)[|>]")
# tags the fast path builds itself (str) or through ruamel's constructor (the rest)
_CONSTRUCTED = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
}


class _Fallback(Exception):
    """This text is outside the fast path: read it with ruamel."""


_Loader: type | None = None
if getattr(yaml, "__with_libyaml__", False):

    class _Yaml12Loader(yaml.CSafeLoader):  # type: ignore[misc,name-defined]
        """libyaml parser, resolving plain scalars with ruamel's YAML 1.2 table."""

        yaml_implicit_resolvers: dict = {}

    for _versions, _tag, _regexp, _first in implicit_resolvers:
        if (1, 2) in _versions:
            _Yaml12Loader.add_implicit_resolver(_tag, _regexp, _first)
    _Loader = _Yaml12Loader

# One round-trip constructor, used only for its stateless scalar methods (int, float, bool, null, timestamp).
_ROUND_TRIP = YAML(typ="rt").constructor


def available() -> bool:
    return _Loader is not None


def load(text: str) -> dict[str, Any] | None:
    """The frontmatter mapping as plain dicts/lists/scalars, or None: read this one with ruamel."""
    if (
        _Loader is None
        or not _FALLBACK_CHARS.isdisjoint(text)
        or _BLOCK_SCALAR.search(text)
        or not text.replace("\n", "").isprintable()
    ):
        return None  # control characters, BOM, exotic line breaks and spaces: the two parsers differ there
    try:
        node = yaml.compose(text, Loader=_Loader)
        if node is None:
            return {}
        if not isinstance(node, yaml.MappingNode):
            return None
        return _build(node)
    except Exception:  # _Fallback, libyaml's errors, a constructor's crash on odd input: ruamel decides
        return None


def _build(node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        if node.tag == _STR:
            return node.value
        if node.tag not in _CONSTRUCTED:
            raise _Fallback(node.tag)
        rnode = rnodes.ScalarNode(node.tag, node.value, style=node.style)
        return _ROUND_TRIP.yaml_constructors[node.tag](_ROUND_TRIP, rnode)
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _SEQ:
            raise _Fallback(node.tag)
        return [_build(item) for item in node.value]
    if node.tag != _MAP:
        raise _Fallback(node.tag)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise _Fallback("non-scalar key")
        key = _build(key_node)
        if key in out:
            raise _Fallback("duplicate key")  # ruamel names it in its error
        out[key] = _build(value_node)
    return out
