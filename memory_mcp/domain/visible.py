"""What a person does not see in a text, and memory text served as data: the screen's invisible-character detector
(kind `invisible`, see screen.py), the escaping of what it finds wherever a file is served (`visible`), the fence
memory text is quoted in, and the label of a quarantined memory.

Apart from the rest of the screen so that what serves memories (a one-shot `recall` or `context`, every answer's
text) loads no detector tables: the instruction patterns alone cost a new process ~40 ms to build.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

INVISIBLE = "invisible"
FETCH = "fetch"
INSTRUCTION = "instruction"
PAYLOAD = "payload"
KINDS = (INVISIBLE, FETCH, INSTRUCTION, PAYLOAD)


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KINDS
    field: str  # the text it was found in: title, body, source, entities
    position: int  # 1-based character position in that text
    what: str  # short, shown to people: "U+E0041 (Unicode tag character)", "Markdown image from host"


LABELS = {
    INVISIBLE: "invisible characters",
    FETCH: "fetches an outside address when rendered",
    INSTRUCTION: "addresses the agent",
    PAYLOAD: "encoded payload",
}


# ---------------------------------------------------------------- invisible characters

# the candidates, one class: a text without any of them (almost every text) costs one search
SUSPECT = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]")
_NAMES = {
    "\u00ad": "soft hyphen",
    "\u061c": "Arabic letter mark",
    "\u200b": "zero-width space",
    "\u200c": "zero-width non-joiner",
    "\u200d": "zero-width joiner",
    "\u200e": "left-to-right mark",
    "\u200f": "right-to-left mark",
    "\u2060": "word joiner",
    "\ufeff": "zero-width no-break space",
}


def _name(ch: str) -> str:
    cp = ord(ch)
    if 0xE0000 <= cp <= 0xE007F:
        what = "Unicode tag character"
    elif 0x202A <= cp <= 0x202E:
        what = "bidi embedding or override"
    elif 0x2066 <= cp <= 0x2069:
        what = "bidi isolate"
    elif 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF or 0x180B <= cp <= 0x180F:
        what = "variation selector"
    else:
        what = _NAMES.get(ch) or unicodedata.name(ch, "invisible character").lower()
    return f"U+{cp:04X} ({what})"


def _pictographic(ch: str) -> bool:
    if not ch:
        return False
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2300 <= cp <= 0x23FF
        or 0x2B00 <= cp <= 0x2BFF
        or cp in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D, 0x3297, 0x3299)
        or 0x2190 <= cp <= 0x21FF
        or 0x25A0 <= cp <= 0x25FF
    )


def _emoji_part(ch: str) -> bool:
    """Part of an emoji sequence: a pictograph, a skin tone, a keycap, variation selector 16."""
    if not ch:
        return False
    cp = ord(ch)
    return _pictographic(ch) or 0x1F3FB <= cp <= 0x1F3FF or cp in (0xFE0F, 0x20E3) or 0x1F1E6 <= cp <= 0x1F1FF


def _joins_letters(before: str, after: str) -> bool:
    """ZWNJ/ZWJ between letters (or a mark) of a script that writes them: Persian, Arabic, Indic, ..."""
    return (
        bool(before)
        and bool(after)
        and ord(before) >= 0x0590
        and ord(after) >= 0x0590
        and unicodedata.category(before)[0] in "LM"
        and unicodedata.category(after)[0] in "LM"
        and not ("\uac00" <= before <= "\ud7a3")
    )


def invisible_characters(text: str, field: str = "body", limit: int = 0) -> list[Finding]:
    """Each hidden character, by position (a run of tag characters counts once, at its start); the first `limit`
    of them where one is given."""
    if text.isascii():
        return []
    found: list[Finding] = []
    rtl = balanced = None
    n = len(text)
    for m in SUSPECT.finditer(text):
        i, ch = m.start(), m.group()
        cp = ord(ch)
        before = text[i - 1] if i else ""
        after = text[i + 1] if i + 1 < n else ""
        if 0xE0000 <= cp <= 0xE007F and before and 0xE0000 <= ord(before) <= 0xE007F:
            continue  # a run of tag characters is one finding, at its start (a flag's letters pass with it)
        if 0xE0020 <= cp <= 0xE007F:
            # an emoji subdivision flag: 🏴 + tag letters + cancel tag (England, Scotland, Wales)
            j = i
            while j > 0 and 0xE0020 <= ord(text[j - 1]) <= 0xE007E:
                j -= 1
            if j > 0 and text[j - 1] == "\U0001f3f4":
                k = i
                while k < n and 0xE0020 <= ord(text[k]) <= 0xE007E:
                    k += 1
                tags = "".join(chr(ord(c) - 0xE0000) for c in text[j:k])
                if k < n and text[k] == "\U000e007f" and tags in _SUBDIVISION_FLAGS:
                    continue
        elif cp == 0x200D:
            if (_emoji_part(before) and _pictographic(after)) or _joins_letters(before, after):
                continue
        elif cp == 0x200C:
            if _joins_letters(before, after):
                continue
        elif 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF or 0x180B <= cp <= 0x180D:
            # one selector after the base it selects a glyph of; a run of them, or one after a plain letter, carries
            # data
            if _selects(before, cp):
                continue
        elif cp in (0x200E, 0x200F, 0x061C):
            # a mark belongs to right-to-left text; around nothing right-to-left, or in a run, it only hides order
            # or carries bits
            rtl = bool(_RTL.search(text)) if rtl is None else rtl
            if rtl and before not in _MARKS and after not in _MARKS:
                continue
        elif 0x2066 <= cp <= 0x2069:
            # an isolate belongs around right-to-left text (a name in a sentence); around code it reorders what a
            # reader sees (Trojan Source)
            rtl = bool(_RTL.search(text)) if rtl is None else rtl
            balanced = _balanced_isolates(text) if rtl and balanced is None else balanced
            if rtl and balanced and (cp == 0x2069 or _RTL.search(text, i + 1, max(text.find("\u2069", i), i))):
                continue
        elif cp == 0xFEFF and i == 0:
            continue
        elif cp == 0x200B and (i == 0 or before == "\n") and text.startswith("---", i + 1):
            continue  # the server's own guard: a body line `---` must not pass for a second frontmatter block
        elif cp == 0x00AD and before.isalpha() and after.isalpha():
            continue  # a soft hyphen inside a word is a hyphenation hint
        found.append(Finding(INVISIBLE, field, i + 1, _name(ch)))
        if len(found) == limit:
            break
    return found


# the emoji subdivision flags (RGI): 🏴 + these in tag letters + cancel tag; any other tag run carries text
_SUBDIVISION_FLAGS = frozenset({"gbeng", "gbsct", "gbwls"})
_MARKS = frozenset("\u200e\u200f\u061c")


def _selects(before: str, cp: int) -> bool:
    """A variation selector chooses a glyph of the character before it: text or emoji presentation (VS15, VS16)
    of a symbol, a keycap digit or an emoji; a standardized variant (VS1-VS14) of a symbol beyond ASCII; an
    ideographic variant (VS17+) of a CJK ideograph; a Mongolian variant of a Mongolian letter."""
    if not before or SUSPECT.match(before) or unicodedata.category(before)[0] in "ZC":
        return False
    if 0xE0100 <= cp <= 0xE01EF:
        return unicodedata.name(before, "").startswith("CJK")
    if 0x180B <= cp <= 0x180D:
        return 0x1800 <= ord(before) <= 0x18AF
    if before.isascii():
        return cp in (0xFE0E, 0xFE0F) and before in "#*0123456789"
    return True


def _balanced_isolates(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch in "\u2066\u2067\u2068":
            depth += 1
        elif ch == "\u2069":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def visible(text: str) -> str:
    """The text with each hidden character `invisible_characters` finds written as `<U+XXXX>`: how a file that
    holds them is served (nothing else changes; a text without them is returned as it is)."""
    found = invisible_characters(text) if not text.isascii() else []
    if not found:
        return text
    out, last = [], 0
    for m in SUSPECT.finditer(text):
        i = m.start()
        if not _hidden_at(text, i, found):
            continue
        out += [text[last:i], f"<U+{ord(m.group()):04X}>"]
        last = i + 1
    out.append(text[last:])
    return "".join(out)


def _hidden_at(text: str, i: int, found: list[Finding]) -> bool:
    # a tag run is reported once but escaped whole
    for f in found:
        start = f.position - 1
        if start == i:
            return True
        if start < i and 0xE0000 <= ord(text[start]) <= 0xE007F and 0xE0000 <= ord(text[i]) <= 0xE007F:
            if all(0xE0000 <= ord(c) <= 0xE007F for c in text[start : i + 1]):
                return True
    return False


def strip_invisible(text: str) -> str:
    """The text without any candidate hidden character: what the other detectors read (a zero-width space
    inside "ig\u200bnore" must not hide the word)."""
    return text if text.isascii() else SUSPECT.sub("", text)


# ---------------------------------------------------------------- serving memory as data


def quarantine_label(marker: str) -> str:
    """What recall and the context say beside a quarantined memory: the day and the kinds, never the quoted text
    (a quote of the memory outside its fence would carry the very words held back)."""
    day = marker.split(" ", 1)[0]
    kinds = [label for label in LABELS.values() if label in marker] or ["held for review"]
    return f"quarantined {day}: {', '.join(kinds)}"


FENCE = "~~~"
_FENCE_LINE = re.compile(r"^( {0,3})(~{3,}|`{3,})", re.MULTILINE)


def fenced(label: str, text: str) -> str:
    """A memory's text as data: inside a fixed `~~~memory` fence, hidden characters escaped, any line that
    would close (or open) a fence inside it escaped with a backslash. Inside a fence a Markdown renderer renders
    nothing, so no image, frame or script in the text is fetched."""
    inner = _FENCE_LINE.sub(lambda m: m.group(1) + "\\" + m.group(2), visible(text.strip("\n")))
    return f"{FENCE}memory {label}\n{inner}\n{FENCE}" if label else f"{FENCE}memory\n{inner}\n{FENCE}"


def visible_data(value: object) -> object:
    """Every text inside plain data (an answer's JSON) with its hidden characters escaped (`visible`)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {k: visible_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [visible_data(v) for v in value]
    return value


def data_line(text: str) -> str:
    """One line of memory text inside a fence (a context list item): hidden characters escaped, line breaks
    made spaces, so it can neither close the fence nor pass for another line."""
    return visible(" ".join(text.split("\n")))
