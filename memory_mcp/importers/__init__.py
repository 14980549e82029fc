"""Importers: memories people already keep elsewhere, brought in through the service's remember.

One module per format parses its input into drafts, links and problems (`records.py`) before anything
is written; `run.py` plans (dedupe, a dry run's counts and sample) and applies (remember with
`trust: imported`, then the links), reporting the conflict gate's pairs and every skipped input.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import Parsed

# each format's name and the module of this package that parses it: loaded for an import of that format only
# (the CLI lists the names in every call's parser; each module's FORMAT is its name, checked at load)
MODULES = {
    "mcp-memory": "mcp_memory",
    "claude-code": "claude_code",
    "basic-memory": "basic_memory",
    "mem0": "mem0",
    "markdown": "markdown",
}
FORMATS = tuple(MODULES)


def parser(fmt: str) -> Callable[[Path], Parsed]:
    """The parse function of one format (KeyError for a name not in FORMATS)."""
    module = importlib.import_module(f".{MODULES[fmt]}", __name__)
    assert module.FORMAT == fmt, f"importers.{MODULES[fmt]} parses {module.FORMAT}, listed as {fmt}"
    return module.parse
