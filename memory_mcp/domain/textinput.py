"""The one rule for text that arrives as an argument and may reach a memory file.

Every edge (MCP tools, CLI, browser view) goes through the service, and the service passes each text
argument through `check_text` before anything is opened or written: a value that breaks the rule is
refused with an error naming the field, so nothing is written and the memory is as it was.

The rule: no C0 control character (U+0000-U+001F), no DEL (U+007F), no C1 control (U+0080-U+009F), no
lone surrogate (U+D800-U+DFFF: it cannot be encoded as UTF-8). Multi-line fields (`MULTI_LINE_FIELDS`:
the body, a deprecate or reactivate reason, a conflict's note) also take tab, newline and carriage
return; a CRLF or a lone CR is written as a newline (browsers send CRLF from a textarea). Single-line
fields (title, entities, source, queries) take none of them.
"""

from __future__ import annotations

import re

from .errors import InputError

MULTI_LINE_FIELDS = frozenset({"body", "reason", "note"})

_SINGLE_LINE_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_MULTI_LINE_BAD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_LINE_BREAK = re.compile(r"\r\n?")


def check_text(value: str, field: str) -> str:
    """`value` as it may be written (CRLF → LF in a multi-line field), or InputError naming `field`.

    `field` is the argument's name as the caller typed it (`entities[2]` for a list item); the part before
    any `[` decides whether it is multi-line."""
    if not isinstance(value, str):
        raise InputError(f"{field}: must be text, not {type(value).__name__}")
    multi_line = field.split("[", 1)[0] in MULTI_LINE_FIELDS
    bad = (_MULTI_LINE_BAD if multi_line else _SINGLE_LINE_BAD).search(value)
    if bad is not None:
        char, name = bad.group(), field.split("[", 1)[0]
        if "\ud800" <= char <= "\udfff":
            what = f"a lone surrogate (U+{ord(char):04X}), which cannot be written as UTF-8"
        else:
            allowed = "tab and line breaks only" if multi_line else "none"
            what = f"the control character U+{ord(char):04X} (allowed in {name}: {allowed})"
        raise InputError(f"{field}: character {bad.start() + 1} is {what}; nothing was written")
    return _LINE_BREAK.sub("\n", value) if multi_line else value


def check_optional(value: str | None, field: str) -> str | None:
    return None if value is None else check_text(value, field)
