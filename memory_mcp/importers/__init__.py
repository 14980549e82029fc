"""Importers: memories people already keep elsewhere, brought in through the service's remember.

One module per format parses its input into drafts, links and problems (`records.py`) before anything
is written; `run.py` plans (dedupe, a dry run's counts and sample) and applies (remember with
`trust: imported`, then the links), reporting the conflict gate's pairs and every skipped input.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import basic_memory, claude_code, markdown, mcp_memory, mem0
from .records import Parsed

PARSERS: dict[str, Callable[[Path], Parsed]] = {
    mcp_memory.FORMAT: mcp_memory.parse,
    claude_code.FORMAT: claude_code.parse,
    basic_memory.FORMAT: basic_memory.parse,
    mem0.FORMAT: mem0.parse,
    markdown.FORMAT: markdown.parse,
}
FORMATS = tuple(PARSERS)
