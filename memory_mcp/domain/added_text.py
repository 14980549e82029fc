"""Text an importer adds to a memory's body, declared once: the importers write it with these, and the conflict
gate reads every body without it (`without_added_text`).

Such text is the importer's wording, not the memory's claim: "Relation `works_at` from Ana to Acme" on every
relation made any two of them "the same attribute: relation"; basic-memory's `Properties:` line gave every note
the attribute words "note, permalink, propert"; Claude Code's `**Why:**` / `**How to apply:**` labels were read
as names (issue 42). Each entry says which importer adds the text and matches exactly what it writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class AddedText:
    importer: str
    what: str
    pattern: re.Pattern[str]  # matches the added text alone (a whole line, or a label before the memory's words)


def relation_line(relation: str, a: str, b: str) -> str:
    """mcp-memory: the line closing a relation's body, naming the relation as the graph held it."""
    return f"Relation `{relation}` from {a} to {b}."


def properties_line(shown: str) -> str:
    """basic-memory and Markdown notes: the frontmatter fields no memory field holds, as one line at the end."""
    return f"Properties: {shown}"


def observation_body(category: str, content: str, note_title: str) -> str:
    """basic-memory: an observation's body, its category label first and the note it came from last."""
    return f"[{category}] {content}\n\nFrom the note {note_title}."


ADDED_TEXT = (
    AddedText(
        "mcp-memory", "a relation's closing line", re.compile(r"^Relation `[^`\n]*` from [^\n]* to [^\n]*\.$", re.M)
    ),
    AddedText("basic-memory", "the properties line", re.compile(r"^Properties: [^\n]*$", re.M)),
    AddedText("basic-memory", "an observation's category label", re.compile(r"^\[[^\[\]\n]+\] ")),
    AddedText("basic-memory", "an observation's note line", re.compile(r"^From the note [^\n]*\.$", re.M)),
    # Claude Code writes these labels in its auto-memory files; the import keeps the file's text as it is
    AddedText("claude-code", "the paragraph labels", re.compile(r"\*\*(?:Why|How to apply):\*\*")),
)


@lru_cache(maxsize=16384)
def without_added_text(body: str) -> str:
    """`body` with every text an importer added taken out (what the conflict gate reads)."""
    if not body:
        return body
    for added in ADDED_TEXT:
        body = added.pattern.sub("", body)
    return body.strip()
