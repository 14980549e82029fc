"""The libyaml fast path must read every frontmatter exactly as ruamel's round-trip loader does.

Differential tests: the same text through `fastyaml.load` and through the round-trip loader
(`canon.HANDLER.load`), compared value by value *and type by type*; where the fast path declines (None),
the round-trip loader alone decides, as in production.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_mcp.canon import fastyaml
from memory_mcp.canon import files as canon

pytestmark = pytest.mark.skipif(not fastyaml.available(), reason="PyYAML without libyaml")

EXAMPLE_STORE = Path(__file__).resolve().parents[1] / "example_store"

TRICKY_PLAIN = [
    "no", "yes", "on", "off", "y", "n", "true", "True", "TRUE", "false", "FALSE", "null", "Null", "~", "NULL",
    "012", "0o17", "0x1F", "0xff_ff", "0b101", "1_000", "+5", "-3", "0", "-0", "1e3", "1E-3", "1.5e-3", ".5",
    "+.5", "1.", "6.8523015e+5", ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "1:20", "190:20:30", "1_2.3_4",
    "2026-01-02", "2026-01-02T03:04:05Z", "2026-01-02 03:04:05.123456789 +02:00", "2026-1-2 3:04:05",
    "2026-01-02t03:04:05-5", "2026-01-02T03:04:05.5", "2026-13-45", "2026-02-30", "9999-12-31T23:59:59Z",
    "=", "<<", "01J8ZQ3V6W", "S0000001", "user-stated", "active", "billing-service", "김민수", "garcía",
    "http://example.com/a?b=c", "a b c", "a#b", "x:y", "-", "--", "1 2", "0x", "0b", "0o", "_", "1__0",
    "12e", "e12", "0.0.0", "1,000", "$100", "50%off",
]  # fmt: skip
TRICKY_QUOTED = [
    "'no'", '"012"', "'it''s'", '"tab\\there"', '"\\u00e9t\\u00e9"', '"\\ud800"', '"\\x41\\n"', "''", '""',
    "'2026-01-02'", '"a: b"', "'# not a comment'", '"\\U0001F600"', '"line\\\nfolded"',
]  # fmt: skip
KEYS = [
    "id", "type", "state", "trust", "entities", "source", "created", "updated", "review_after", "supersedes",
    "superseded_by", "related", "conflicts", "title", "custom", "1", "true", "null", "2026-01-02", "é",
]  # fmt: skip

scalar = st.one_of(
    st.sampled_from(TRICKY_PLAIN),
    st.sampled_from(TRICKY_QUOTED),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
)


@st.composite
def value_text(draw: st.DrawFn, indent: str) -> str:
    kind = draw(st.sampled_from(["scalar", "scalar", "flow", "block", "literal", "folded", "map", "empty"]))
    if kind == "scalar":
        return " " + draw(scalar)
    if kind == "flow":
        return " [" + ", ".join(draw(st.lists(scalar, max_size=4))) + "]"
    if kind == "block":
        items = draw(st.lists(scalar, min_size=1, max_size=3))
        return "".join(f"\n{indent}  - {item}" for item in items)
    if kind in ("literal", "folded"):
        lines = draw(st.lists(st.sampled_from(TRICKY_PLAIN), min_size=1, max_size=3))
        mark = "|" if kind == "literal" else ">"
        return f" {mark}" + "".join(f"\n{indent}  {line}" for line in lines)
    if kind == "map":
        pairs = draw(st.lists(st.tuples(st.sampled_from(["with", "status", "detected", "note"]), scalar), max_size=3))
        return "\n" + indent + "  - " + f"\n{indent}    ".join(f"{k}: {v}" for k, v in pairs) if pairs else " {}"
    return ""


@st.composite
def frontmatter(draw: st.DrawFn) -> str:
    lines = []
    for key in draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=8)):
        comment = draw(st.sampled_from(["", "", " # a comment"]))
        lines.append(f"{key}:{draw(value_text(''))}{comment}")
    return "\n".join(lines) + "\n"


def same(fast: object, slow: object) -> bool:
    """Equal values of the same kind (bool is not int, datetime is not date, offsets compared too)."""
    kinds = (bool, int, float, str, datetime, date, list, dict, type(None))
    kind_fast = next(k for k in kinds if isinstance(fast, k))
    if not isinstance(slow, kind_fast) or (kind_fast is date and isinstance(slow, datetime)):
        return False
    if kind_fast is bool and not isinstance(fast, bool) == isinstance(slow, bool):
        return False
    if isinstance(fast, dict):
        return list(fast) == list(slow) and all(same(fast[k], slow[k]) for k in fast)  # type: ignore[index]
    if isinstance(fast, list):
        return len(fast) == len(slow) and all(same(a, b) for a, b in zip(fast, slow, strict=True))  # type: ignore[arg-type]
    if isinstance(fast, float) and math.isnan(fast):
        return math.isnan(slow)  # type: ignore[arg-type]
    if isinstance(fast, datetime):
        return fast == slow and fast.utcoffset() == slow.utcoffset() and canon._as_text(fast) == canon._as_text(slow)  # type: ignore[union-attr]
    return fast == slow and str(fast) == str(slow)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frontmatter())
def test_fast_reader_agrees_with_round_trip_loader(text: str) -> None:
    fast = fastyaml.load(text)
    try:
        slow = canon.HANDLER.load(text)
    except canon.CanonError:
        # the round-trip loader refuses this text: the fast path must have declined it, so the
        # file gets the same reason through the round-trip path
        assert fast is None, f"fast path accepted what ruamel refuses: {text!r} -> {fast!r}"
        return
    if fast is not None:
        assert same(fast, dict(slow)), f"{text!r}: fast {fast!r} != round-trip {dict(slow)!r}"


@pytest.mark.parametrize(
    "text",
    [
        "id: a\nbase: &b x\nother: *b\n",  # anchors and aliases
        "id: a\ntag: !!python/object x\n",  # tags
        "%YAML 1.1\n---\nflag: no\n",  # a directive changes the resolution
        "id: a\nid: b\n",  # duplicate keys
        "? [a, b]\n: c\n",  # non-scalar key
        "- a\n- b\n",  # not a mapping
        "a: [" * 2000 + "]" * 2000,  # nesting deeper than libyaml allows
        "a: b\n  c: d\n",  # bad YAML
    ],
)
def test_fast_reader_declines_what_only_the_round_trip_loader_may_judge(text: str) -> None:
    assert fastyaml.load(text) is None


def test_server_written_and_example_files_take_the_fast_path_with_identical_memories() -> None:
    written = canon.render_new(
        {
            "id": "01J8ZQ3V6W0000000000000000",
            "type": "fact",
            "entities": ["alice", "김민수"],
            "created": canon.now_iso(),
        },
        "Title",
        "Body",
    )
    files = [("written", written.encode())] + [(p.name, p.read_bytes()) for p in sorted(EXAMPLE_STORE.rglob("*.md"))]
    fast_count = 0
    for name, data in files:
        text = canon.decode(data)
        if not text.startswith("---"):
            continue
        fm, _ = canon.HANDLER.split(text)
        fast = fastyaml.load(fm)
        if fast is None:
            continue
        fast_count += 1
        assert same(fast, dict(canon.HANDLER.load(fm))), name
    assert fast_count >= 5, "the fast path should read ordinary canon files"


@pytest.mark.parametrize(
    "text",
    [
        "id: a\norigin: sync from Ana <ana@example.com>; cli\n",  # a teammate's memory as sync stamps it
        "id: a\nnote: a > b and c | d\n",
        "id: a\nentities: [x>y, a|b]\n",
    ],
)
def test_a_bar_or_angle_inside_a_value_keeps_the_fast_path_and_agrees(text: str) -> None:
    # every stamped file took ruamel's slow path (`>` anywhere declined it): 34x slower reads after a sync
    fast = fastyaml.load(text)
    assert fast is not None and same(fast, dict(canon.HANDLER.load(text)))
