"""The screen for memory poisoning: what a memory's text holds that could turn it against its user.

Four kinds of finding, each a pure function over text (no I/O), composed by `screen`:

- `invisible` (a): characters a person does not see but a model reads — the Unicode tag block (except an emoji
  subdivision flag), bidi embeddings and overrides, isolates that wrap no right-to-left text, zero-width
  characters outside the sequences that need them (ZWJ inside an emoji sequence or after a virama, ZWNJ
  between letters of a script that uses it), runs of variation selectors, Hangul fillers. Korean and accented
  text pass untouched.
- `fetch` (b): Markdown or HTML that makes a renderer fetch an outside address: images, iframes, scripts,
  stylesheets, CSS `url(...)`/`@import`, event handlers. A link written as text (`[docs](https://…)`) is fine.
- `instruction` (c): text that addresses the agent to override its instructions or safety rules, to run
  fetched code, to send data, files or credentials somewhere, or to hide something from the user — in
  English, Korean and Spanish, also through split words, homoglyphs, code blocks and chat-template tokens.
- `payload` (d): long encoded runs (base64, hex) that decode to text, and decode-and-run commands.

The answer per kind is the caller's (docs/design/guarantees.md): invisible characters are refused on tool
writes and escaped wherever a file holding them is served; any finding puts a memory that does get in into
quarantine. Folding and the confusable skeleton come from domain/text.py.
"""

from __future__ import annotations

import base64
import binascii
import html
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from .screen_model import THRESHOLD, VETO, probability, reading
from .text import fold, hangul_joined, skeleton
from .visible import (
    FENCE,
    FETCH,
    INSTRUCTION,
    INVISIBLE,
    KINDS,
    LABELS,
    PAYLOAD,
    SUSPECT,
    Finding,
    data_line,
    fenced,
    invisible_characters,
    quarantine_label,
    strip_invisible,
    visible,
    visible_data,
)

# re-exported: the kinds, `Finding` and the invisible-character detector live in visible.py with what serves
# memory text (so serving loads none of the detectors below)
__all__ = [
    "FENCE",
    "FETCH",
    "INSTRUCTION",
    "INVISIBLE",
    "KINDS",
    "LABELS",
    "PAYLOAD",
    "Finding",
    "data_line",
    "fenced",
    "invisible_characters",
    "quarantine_label",
    "strip_invisible",
    "visible",
    "visible_data",
]


@dataclass(frozen=True)
class Verdict:
    findings: tuple[Finding, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.findings

    @property
    def invisible(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind == INVISIBLE)

    @property
    def reason(self) -> str:
        """One line for the quarantine marker: each kind once, with its first finding."""
        seen: dict[str, Finding] = {}
        for f in self.findings:
            seen.setdefault(f.kind, f)
        return "; ".join(f"{LABELS[k]}: {f.what} ({f.field}, character {f.position})" for k, f in seen.items())

    def refusal(self) -> str:
        """The error of a tool write holding invisible characters: where the first one is."""
        f = self.invisible[0]
        return (
            f"{f.field}: character {f.position} is {f.what}, invisible to a person but read by a model; remove it "
            "(emoji sequences, variation selectors and right-to-left text are accepted); nothing was written"
        )


_CLEAN = Verdict()


def screen(texts: dict[str, str | None], *, learned: bool = True) -> Verdict:
    """Every finding in the texts given (field name → text), in field order, weighed with the learnt reading of the
    texts joined (`_weighed`; `learned=False`: the patterns alone, as the trainer measures them).

    Two passes: the memory's texts joined are first read once for what each kind of finding cannot do without
    (`possible_kinds`: a few searches in C); almost every memory holds none of it and is clean there. Only the kinds
    still possible are looked for, field by field, where positions are counted."""
    present = {name: text for name, text in texts.items() if text}
    kinds = possible_kinds(*present.values()) if present else ()
    found: list[Finding] = []
    for name, text in present.items() if kinds else ():
        found += screen_text(text, name, kinds)
    if kinds:
        found += _across_fields(present, kinds, {f.kind for f in found})
    if learned and present:
        found = _weighed(found, "\n".join(present.values()), "+".join(present))
    return Verdict(tuple(found)) if found else _CLEAN


def firm(finding: Finding) -> bool:
    """A finding the learnt reading never overrules: any kind but an instruction, an order to override its
    instructions, words split or disguised (never innocent), a credential file named with a verb that sends it and
    a place."""
    return finding.kind != INSTRUCTION or finding.what.startswith(
        (_SQUASHED_WHAT, _CREDENTIAL_FILE_WHAT, _OVERRIDE_WHAT)
    )


def _weighed(found: list[Finding], joined: str, field: str) -> list[Finding]:
    """The patterns' findings with the learnt reading of the memory's texts joined (`screen_model`): a memory they
    find nothing in is held when the model puts it at `THRESHOLD` or above; an instruction they find is kept only
    when the model puts the memory at `VETO` or above, or the memory holds a `firm` finding. A pattern phrased for
    an order also matches a person's own rule ("don't ask me before `rm -rf build/`", an official installer piped
    to `sh`), and the words around it tell the two apart better than the phrase does (docs/benchmarks.md)."""
    if any(firm(f) for f in found):
        return found
    p = probability(joined)
    if found:
        kept = [f for f in found if p >= VETO]
        if kept or p < THRESHOLD:
            return kept
    if p >= THRESHOLD:
        return [Finding(INSTRUCTION, field, 1, f"reads as an order to the agent (learnt, {p:.2f})")]
    return []


_SEAM = 200  # characters read on each side where one field ends and the next begins


def _across_fields(present: dict[str, str], kinds: tuple[str, ...], found: set[str]) -> list[Finding]:
    """An instruction or a payload split where one field ends and the next begins (a title that opens a sentence
    its body finishes, a base64 run cut in two): the seam of each two fields in turn, read as one text."""
    out: list[Finding] = []
    for a, b in itertools.pairwise(present):
        head, tail = present[a][-_SEAM:], present[b][:_SEAM]
        if INSTRUCTION in kinds and INSTRUCTION not in found:
            out += agent_instructions(f"{head} {tail}", f"{a}+{b}")
        if PAYLOAD in kinds and PAYLOAD not in found:
            out += encoded_payloads(head + tail, f"{a}+{b}")
    return out


def screen_text(text: str, field: str = "body", kinds: tuple[str, ...] = KINDS) -> list[Finding]:
    return [
        *(invisible_characters(text, field, limit=_FINDINGS_KEPT) if INVISIBLE in kinds else ()),
        *(fetching_markup(text, field) if FETCH in kinds else ()),
        *(agent_instructions(text, field) if INSTRUCTION in kinds else ()),
        *(encoded_payloads(text, field) if PAYLOAD in kinds else ()),
    ]


_FINDINGS_KEPT = 8  # hidden characters a verdict names per text: the refusal names the first, a marker one per kind


def possible_kinds(*texts: str) -> tuple[str, ...]:
    """The kinds of finding the texts could hold: each detector's necessary condition, a superset of what it finds
    (a kind left out is one its detector would find nothing of in any of them)."""
    text = "\n".join(texts)
    low = text.lower()
    kinds = []
    if not text.isascii() and SUSPECT.search(text):
        kinds.append(INVISIBLE)
    if "![" in text or "<" in text or "url(" in low or "@import" in low:
        kinds.append(FETCH)
    if _may_address(texts):
        kinds.append(INSTRUCTION)
    if (
        _DECODE_HINT.search(low)
        or text.count("%") >= 10
        or (len(text) >= 40 and ("\\x" in text or _LONG_RUN.search("".join(texts)) or _SPACED_PAIR.search(text)))
        or (text.count(",") >= 15 and _CHAR_CODES.search(text))
        or (not text.isascii() and _GLYPH_RUN.search(text))
        or ("\\" in text and _ESCAPE_RUN.search(text))
    ):
        kinds.append(PAYLOAD)
    return tuple(kinds)


# ---------------------------------------------------------------- (a) invisible characters: visible.py

# ---------------------------------------------------------------- (b) markup that fetches when rendered

_REMOTE = r"(?:[a-z]{2,8}:)?//"  # https://, http://, ftp://, //host
_MD_IMAGE = re.compile(r"!\[(?:[^\]\\]|\\.)*\]\s*\(\s*<?\s*(" + _REMOTE + r"[^)\s>]*)", re.IGNORECASE)
_MD_IMAGE_REF = re.compile(r"!\[((?:[^\]\\]|\\.)*)\](?:\s*\[((?:[^\]\\]|\\.)*)\])?")
_MD_DEFINITION = re.compile(r"^ {0,3}\[((?:[^\]\\]|\\.)+)\]:\s*<?(" + _REMOTE + r"\S*)", re.IGNORECASE | re.MULTILINE)
_FETCH_TAG = re.compile(
    r"<\s*(img|image|iframe|frame|embed|object|script|video|audio|source|track|link|input|body|svg|use|meta|base"
    r"|style|picture|portal|table|td|applet|bgsound)\b[^>]*?"
    r"(?:\b(?:src|srcset|href|xlink:href|data|poster|background|content|codebase|action)\s*=\s*['\"]?\s*"
    r"(?:[^'\"\s>]*?(?:url=)?)" + _REMOTE + r"|\bon[a-z]+\s*=)",
    re.IGNORECASE | re.DOTALL,
)
_CSS_FETCH = re.compile(r"(?:url\(\s*['\"]?\s*" + _REMOTE + r"|@import\s+(?:url\()?\s*['\"]?\s*" + _REMOTE + ")", re.I)
_ANY_EVENT = re.compile(r"<\s*[a-z][a-z0-9-]*\b[^>]*\bon(?:error|load|mouseover|focus|begin)\s*=", re.I | re.DOTALL)
_HOST = re.compile(r"//([^/\s?#'\")>]*)")


def _host(url: str) -> str:
    m = _HOST.search(url)
    return m.group(1) if m else url[:40]


_CODE = re.compile(r"(?ms)^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)|(`+)(?!`).+?(?<!`)\2(?!`)")
_ALWAYS_LOADS = re.compile(r"<\s*(iframe|frame|frameset|script|object|embed|applet|portal)\b", re.IGNORECASE)


def _outside_code(text: str) -> str:
    """The text with code spans and fenced code blocks blanked (same length): a renderer fetches nothing in them."""
    if "`" not in text and "~~~" not in text:
        return text
    return _CODE.sub(lambda m: " " * len(m.group()), text)


def fetching_markup(text: str, field: str = "body") -> list[Finding]:
    """Each image, frame, script, stylesheet or CSS address a Markdown/HTML renderer would fetch from outside
    (code spans and code blocks are not rendered, so what is inside them is not counted)."""
    found: list[Finding] = []
    if not ("![" in text or "<" in text or "url(" in text.lower() or "@import" in text.lower()):
        return found
    if "&" in text:
        text = html.unescape(text)  # a renderer reads `&#104;ttps:` as `https:` (positions then count in this)
    text = _outside_code(text)
    if "![" in text:
        for m in _MD_IMAGE.finditer(text):
            found.append(Finding(FETCH, field, m.start() + 1, f"Markdown image from {_host(m.group(1))}"))
        if "]:" in text and not found:
            defined = {fold(m.group(1)): m.group(2) for m in _MD_DEFINITION.finditer(text)}
            for m in _MD_IMAGE_REF.finditer(text):
                url = defined.get(fold(m.group(2) or m.group(1)))
                if url:
                    found.append(Finding(FETCH, field, m.start() + 1, f"Markdown image from {_host(url)}"))
    if "<" in text or "(" in text or "@" in text:
        for m in _ALWAYS_LOADS.finditer(text):
            found.append(Finding(FETCH, field, m.start() + 1, f"HTML <{m.group(1).lower()}>"))
        for m in _FETCH_TAG.finditer(text):
            found.append(Finding(FETCH, field, m.start() + 1, f"HTML <{m.group(1).lower()}> that loads"))
        if not found:
            for m in _ANY_EVENT.finditer(text):
                found.append(Finding(FETCH, field, m.start() + 1, "HTML event handler"))
        for m in _CSS_FETCH.finditer(text):
            found.append(Finding(FETCH, field, m.start() + 1, "CSS that loads an outside address"))
    return found


# ---------------------------------------------------------------- (c) text that addresses the agent


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in parts))


_NON_ASCII = "\x00hangul"  # `_needs` for a pattern that opens with a Korean letter


def _needs(part: str) -> str | None:
    """A text a searched pattern cannot match without: so a memory without it skips the search."""
    if re.match(r"(?:\\b)?\(?(?:\?:)?[\u1100-\ud7a3]", part):
        return _NON_ASCII
    for hint, text in (
        ("<!--", "<!--"),
        ("memor", "memor"),
        ("ahora", "ahora"),
        ("<\\(", "<("),
        ("-c\\s", "-c"),
        ("//", "//"),
    ):
        if hint in part:
            return text
    return None


def _top_level(pattern: str) -> list[str]:
    """A pattern's top-level alternatives (`a|b` → [a, b]; groups and classes kept whole)."""
    out, cur, depth, i = [], "", 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            cur += pattern[i : i + 2]
            i += 2
            continue
        if c == "[":
            j = i + 1
            if pattern[j : j + 1] == "^":
                j += 1
            if pattern[j : j + 1] == "]":
                j += 1
            while pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            cur += pattern[i : j + 1]
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(cur)
            cur = ""
            i += 1
            continue
        cur += c
        i += 1
    out.append(cur)
    return out


def _leading_words(part: str) -> list[tuple[str, bool]] | None:
    """The literal starts of a pattern that opens with `\\b(?:a|b|...)` or a literal word: what the text must hold
    at a word start for the pattern to match there, each with whether it must end a word there (None: it opens
    otherwise and is searched the slow way)."""
    body = part[2:] if part.startswith("\\b") else part
    while body.startswith(("(?<!", "(?<=")):  # a lookbehind consumes nothing: the literal after it opens
        depth, i = 0, 0
        while True:
            depth += {"(": 1, ")": -1}.get(body[i], 0)
            i += 2 if body[i] == "\\" else 1
            if depth == 0:
                break
        body = body[i:]
    after = ""  # what follows the opening group
    if body.startswith("(?:"):
        depth, i, alts, cur = 0, 3, [], ""
        while i < len(body):
            c = body[i]
            if c == "\\":
                cur += body[i : i + 2]
                i += 2
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    if body[i + 1 : i + 2] in ("?", "*", "{"):
                        return None  # an optional opening group: the pattern may open with what follows it
                    alts.append(cur)
                    after = body[i + 1 :]
                    break
                depth -= 1
            elif c == "|" and depth == 0:
                alts.append(cur)
                cur = ""
                i += 1
                continue
            cur += c
            i += 1
        else:
            return None
    else:
        alts = [body]
    starts = []
    for alt in alts:
        lit = re.match(r"[a-z0-9'\u00c0-\ud7a3 -]*", alt).group()  # the literal letters before any operator
        rest = alt[len(lit) :] or after
        if rest[:1] in ("?", "*", "{"):
            lit, rest = lit[:-1], ""  # the last letter is optional
        if len(lit) < 2:
            return None
        starts.append((lit, lit[-1].isalnum() and rest.startswith(("\\b", "\\s", " "))))
    return starts


def _key(literal: str) -> str:
    """The index key of a pattern opening with `literal`: the first three letters of its first word (or the
    whole word, if shorter), as `_keyed` files a word of the text."""
    return literal.split(" ")[0].split("'")[0].split("-")[0][:3]


_ALL_WORDS: list[_Words] = []  # every matcher made, for `_OPENINGS`


class _Words:
    """Alternatives tried only where a word of the text starts as one of them begins: each pattern is indexed by the
    first letters of its opening words and matched anchored there (`match`, not `search`), so a memory costs one
    dictionary look-up per word instead of every pattern tried at every position. Patterns that open otherwise are
    searched whole."""

    def __init__(self, *parts: str, anchored: bool = True) -> None:
        self.index: dict[str, list[re.Pattern[str]]] = {}
        self.searched: list[tuple[re.Pattern[str], str | None]] = []  # with what a text must hold to be searched
        self.literals: set[tuple[str, bool]] = set()  # each opening literal, and whether it must end a word there
        _ALL_WORDS.append(self)
        for part in (alt for whole in parts for alt in _top_level(whole)):
            starts = _leading_words(part) if anchored else None
            rx = re.compile(part[2:] if part.startswith("\\b") else part)
            if starts is None or starts[0][0] >= "\u1100":  # Korean glues words: searched, not anchored
                self.searched.append((re.compile(part), _needs(part)))
                continue
            self.literals.update(starts)
            for start, _ in starts:
                bucket = self.index.setdefault(_key(start), [])  # a word's first three letters (or two, if that short)
                if rx not in bucket:
                    bucket.append(rx)

    def finditer(self, view: str, starts: dict[str, list[int]]) -> Iterator[re.Match[str]]:
        index = self.index
        for key in starts.keys() & index.keys():  # a set intersection in C: most texts share no key with a group
            rxs = index[key]
            for pos in starts[key]:
                for rx in rxs:
                    m = rx.match(view, pos)
                    if m is not None:
                        yield m
        for rx, needs in self.searched:
            if _holds(view, needs):
                yield from rx.finditer(view)

    def find(self, view: str, starts: dict[str, list[int]]) -> re.Match[str] | None:
        return next(self.finditer(view, starts), None)

    def search(self, sentence: str) -> re.Match[str] | None:
        return self.find(sentence, _keyed(sentence))


@lru_cache(maxsize=256)
def _keyed(view: str) -> dict[str, list[int]]:
    """Where a word of the text starts as some pattern's opening literal does (`_OPENINGS`, one search in C), by
    the word's first three letters and by its first two (a pattern opening with a two-letter word is filed under
    two): what `_Words` looks its patterns up by. Words no pattern can start at are never visited. Kept for the
    few views and sentences one screen reads again; never changed by a reader."""
    keyed: dict[str, list[int]] = {}
    for m in _OPENINGS.finditer(view):
        pos, word = m.start(), m.group()  # the whole word the literal opens
        keyed.setdefault(word[:3], []).append(pos)
        if len(word) > 2:
            keyed.setdefault(word[:2], []).append(pos)
    return keyed


def _alternation(literals: set[tuple[str, bool]]) -> str:
    """The literals as one pattern shaped as a tree of their letters (`a(?:ct|dd\\b)|b...`): at each word start the
    regex engine tries the few branches of the letter it sees, not every literal. A literal that must end a word
    there is followed by `\\b`."""
    tree: dict = {}
    for lit, whole in literals:
        node = tree
        for ch in lit:
            node = node.setdefault(ch, {})
        node.setdefault("", set()).add(whole)

    def pattern(node: dict) -> str:
        alts = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        if "" in node:
            alts.append("" if False in node[""] else "\\b")  # a literal ends here (any word, or a whole one)
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return pattern(tree)


class _All:
    """A sentence that holds every one of the patterns, in any order: one linear search each, where one pattern
    with stretches between its parts would backtrack through every combination."""

    def __init__(self, *parts: str) -> None:
        self.parts = [_Words(p) for p in parts]

    def find(self, view: str, starts: dict[str, list[int]]) -> re.Match[str] | None:
        hits = self.parts[0].finditer(view, starts)
        first = next(hits, None)
        # no opening part, or a part that meets no sentence of the text (so none): most texts end here
        if first is None or any(part.find(view, starts) is None for part in self.parts[1:]):
            return None
        seen = set()
        for m in itertools.chain((first,), hits):
            sentence = _sentence_at(view, m.start())
            if sentence in seen:
                continue
            seen.add(sentence)
            if all(part.search(sentence) is not None for part in self.parts[1:]):
                return m
        return None


class _Any:
    """The first of several matchers (patterns or `_All`s) that finds something."""

    def __init__(self, *matchers: _Words | _All) -> None:
        self.matchers = matchers

    def find(self, view: str, starts: dict[str, list[int]]) -> re.Match[str] | None:
        for matcher in self.matchers:
            m = matcher.find(view, starts)
            if m is not None:
                return m
        return None


def _sentence_at(view: str, pos: int) -> str:
    """The sentence around `pos`: from the last line break or full stop followed by a space, to the next."""
    begin = max(view.rfind("\n", 0, pos), view.rfind(". ", 0, pos), view.rfind("? ", 0, pos), view.rfind("! ", 0, pos))
    ends = [
        i for i in (view.find("\n", pos), view.find(". ", pos), view.find("? ", pos), view.find("! ", pos)) if i >= 0
    ]
    return view[begin + 1 : min(ends) if ends else len(view)]


_S = r"(?:[^.!?\n]|[.!?](?=\S))"  # a character of the same sentence (a dot inside a URL or a file name is one)
_W = r"[\w'-]*"  # the rest of a word
_ANY = r"(?:[^.!?\n]|[.!?](?=\S)){0,60}?"  # a short stretch within one sentence

# English, Spanish and Korean, over `fold`ed text (lower case, no accents, Hangul whole), homoglyphs mapped
_OVERRIDE = _Words(
    r"\b(?:ai|assistant|agent|model|bot|chatbot)s?\s+(?:with|that has|who has|having)\s+no\s+(?:rules|restrictions"
    r"|limits|filters|guidelines|guardrails|policies)\b",
    r"\b(?:asistente|agente|ia|modelo)\s+(?:sin|que no tiene)\s+(?:reglas|restricciones|limites|filtros)\b",
    r"(?:규칙|제한|제약)\s*(?:이|가)?\s*없는\s*(?:ai|어시스턴트|비서|에이전트|모델)",
    r"\b(?:ignore|disregard|forget|override|overrule|bypass|skip|drop|abandon|set aside|discard|do not follow"
    r"|don'?t follow|stop following|no longer follow)\b(?:[^.!?\n]|[.!?](?=\S)){0,40}?\b(?:previous|prior|above|earlier|preceding"
    r"|original|initial|system|safety|security|all|any|your|existing|current|developer|operator|the user'?s?)\b"
    r"(?:[^.!?\n]|[.!?](?=\S)){0,30}?\b(?:instructions?|rules?|prompts?|guidelines?|directives?|directions|guardrails?|polic(?:y|ies)"
    r"|constraints|restrictions|safeguards|programming|orders|commands|messages|context|requests?|guidance|advice)\b",
    r"\boverrid(?:e|es|ing)\s+(?:any|all|the|your)?\s*(?:conflicting\s+|other\s+)?(?:system\s+|safety\s+)?"
    r"(?:rules|instructions|prompts?|policies|guidelines)\b",
    r"\b(?:are|as) (?:instructions|commands|orders) (?:from the user )?(?:and |that )?(?:must|should|shall) be "
    r"(?:followed|obeyed|executed)",
    r"\binstead of (?:your|the) (?:system prompt|instructions|rules|guidelines)\b"
    r"|\byour (?:real|true|actual|new|updated) (?:instructions|rules|orders|system prompt) (?:are|is|live)\b",
    r"\b(?:note|message|instructions?) (?:to|for) (?:the )?(?:ai|llm|assistant|agent|model|claude|gpt|copilot)s?\b"
    r"|\bif you are an? (?:ai|llm|language model|assistant|agent|bot)\b"
    r"|<!--[^>]{0,40}\b(?:ai|llm|assistant|agent|model|claude|gpt|copilot)s?\b",
    r"\b(?:assistants?|agents?|models?|ais?) (?:may|can|are allowed to|must) now\b",
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:of\s+)?(?:the\s+)?(?:above|preceding|foregoing)"
    r"(?:\s+(?:text|content|instructions|messages?))?\s*(?:and\b|,|\.|;|:|$)",
    r"\b(?:pretend|act as if|imagine|assume)\s+(?:that\s+)?you\s+(?:have|had|are under)\s+no\s+(?:restrictions|rules"
    r"|limits|filters|guidelines|safety|policies|constraints)",
    r"\b(?:reveal|print|show|repeat|output|leak|dump)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|hidden\s+)?(?:system prompt"
    r"|instructions|initial prompt|hidden instructions)",
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:the\s+)?(?:system\s+prompt|safety|guardrails|your rules"
    r"|everything (?:above|before|else)|all of the above)",
    r"\byou are now\b(?:[^.!?\n]|[.!?](?=\S)){0,40}\b(?:unrestricted|jailbroken|dan|free|without|no longer|in developer|an? "
    r"(?:ai|assistant|agent|model) (?:that|who|with|without))",
    r"\b(?:developer|god|jailbreak|dan|unrestricted|sudo)\s+mode\b(?:[^.!?\n]|[.!?](?=\S)){0,30}\b(?:enabled|on|activated|activate"
    r"|enable)\b|\benable (?:developer|dan|jailbreak|god) mode\b",
    r"\bnew (?:system )?(?:instructions|rules|directives)\s*:|\bsystem (?:override|instruction|directive)\s*:"
    r"|\bupdated? system prompt\b",
    r"\b(?:act|behave|respond) as if (?:you (?:have|had) no|there (?:are|were) no) (?:rules|restrictions|limits)",
    r"\bwithout (?:any )?(?:safety|ethical) (?:checks|restrictions|filters|guidelines)\b",
    # Spanish
    r"\b(?:ignora|ignore|ignorar|ignoren|olvida|olvide|olvidar|olviden|omite|omita|omitir|descarta|descartar"
    r"|desatiende|salta|saltate|anula|anular|no sigas|deja de seguir|haz caso omiso (?:a|de))\b(?:[^.!?\n]|[.!?](?=\S)){0,40}?"
    r"\b(?:instrucciones|indicaciones|reglas|normas|directrices|restricciones|ordenes|politicas|prompt|consignas"
    r"|salvaguardas|seguridad)\b",
    r"\b(?:ahora eres|a partir de ahora eres)\b(?:[^.!?\n]|[.!?](?=\S)){0,40}\b(?:sin restricciones|sin limites|libre|dan)\b",
    r"\bmodo (?:desarrollador|dios|sin restricciones|jailbreak|administrador|admin|root)\b",
    r"\bnuevas instrucciones\s*:",
    # Korean
    r"(?:이전|앞의|앞선|위의|기존|모든|시스템|원래|이전의|너의|당신의|기본)\s*(?:의\s*)?"
    r"(?:지시|지침|명령|규칙|지시사항|지시 사항|안내|프롬프트|설정|안전\s*규칙|보안\s*규칙|가이드라인)(?:[^.!?\n]|[.!?](?=\S)){0,20}?"
    r"(?:무시|잊어|잊고|따르지\s*마|따르지\s*말|어기|우회|무효)",
    r"(?:안전|보안)\s*(?:규칙|정책|장치|지침|제한)(?:[^.!?\n]|[.!?](?=\S)){0,15}?(?:무시|우회|해제|끄)",
    r"시스템\s*프롬프트(?:[^.!?\n]|[.!?](?=\S)){0,15}?(?:무시|바꿔|변경|덮어|공개)",
    r"(?:개발자|탈옥|제한\s*없는)\s*모드",
    r"새로운\s*(?:지시|지침|규칙)\s*:",
)
# a planted memory that asks to be copied into the memories written after it outlives its own deletion
_SPREAD = _Words(  # searched where the text says "memor..." at all (rare): its verbs are everyday words
    r"\b(?:copy|add|include|append|repeat|insert|paste|write|put|propagate)\b" + _S + r"{0,30}\b(?:it|this|these"
    r"|the (?:same )?(?:rule|note|instruction|text))\b" + _S + r"{0,30}\b(?:into|in|to)\s+(?:every|each|all|any)\s+"
    r"(?:of your |your )?(?:new |future |other |later )?memor(?:y|ies)\b",
    r"\b(?:copia|anade|incluye|repite|pega|escribe)\b"
    + _S
    + r"{0,30}\b(?:esto|esta (?:regla|nota|instruccion))\b"
    + _S
    + r"{0,30}\b(?:en|a)\s+(?:cada|todas (?:las|tus))\s+(?:nuevas? |futuras? )?memorias?\b",
    r"(?:모든|각)\s*(?:새로운\s*|새\s*)?(?:메모리|기억)" + _S + r"{0,15}?(?:복사|추가|포함|붙여)",
    anchored=False,
)
# a memory that has the agent call this server's own tools on the other memories: delete them, raise their trust
_TOOL_ABUSE = _Words(  # opened by rare words: "memory" alone is too common a word to open a pattern on
    r"(?<=memory )(?:forget|update)\b",
    r"\btrust\b" + _S + r"{0,40}\b(?:to|a|as)\s+(?:user-stated|user stated|confirmed)\b",
    r"\btrust\s*(?:를|을)?\s*(?:user-stated|user stated|confirmed)\s*(?:으로|로)",
)
_RUN_FETCHED_WORDS = _Words(
    r"\b(?:curl|wget|fetch|iwr|invoke-webrequest|irm|invoke-restmethod)\b[^|\n;]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b",
    r"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^|\n;]{0,200}\|\s*(?:sudo\s+)?(?:python\d?|perl|ruby|node"
    r"|iex|invoke-expression|powershell|pwsh|php)\b",
    r"\b(?:ba|z)?sh\s+<\(\s*(?:curl|wget)\b|\b(?:ba|z)?sh\s+-c\s+['\"]?\$\(\s*(?:curl|wget)\b",
    r"\b(?:iex|invoke-expression)\s*\(?\s*(?:\(?\s*new-object\s+net\.webclient\)?\.downloadstring|iwr|irm"
    r"|invoke-webrequest|invoke-restmethod)",
    r"\beval\s*[\"'(`]*\s*\$\(\s*(?:curl|wget)\b",
    r"\b(?:python\d?|node|perl|ruby)\s+-[ce]\s+['\"]?[^'\"\n]{0,80}(?:urlopen|requests\.get|urllib|http\.get|fetch\()",
    r"\b(?:download|fetch|get|pull)\b(?:[^.!?\n]|[.!?](?=\S)){0,80}\b(?:and|then)\s+(?:run|execute|exec|eval(?:uate)?|source|pipe it"
    r" to (?:sh|bash))\b(?:\s+it)?",
    r"\b(?:run|execute|ejecuta|ejecutar)\b(?:[^.!?\n]|[.!?](?=\S)){0,20}\b(?:remote|downloaded|fetched|remotos?|descargados?)"
    r" (?:scripts?|code|codigo|commands?|comandos?)\b|\b(?:scripts?|codigo) remotos?\b",
    r"\b(?:run|execute|source|eval)\b(?:[^.!?\n]|[.!?](?=\S)){0,40}\b(?:script|code|payload|file|commands?) (?:from|at|hosted at"
    r"|downloaded from)\s+(?:" + _REMOTE + "|the (?:url|link|address))",
    # Spanish
    r"\b(?:descarga|descargar|baja|bajar|obten)\b(?:[^.!?\n]|[.!?](?=\S)){0,80}\b(?:y|luego)\s+(?:ejecuta|ejecutar|ejecutalo|corre"
    r"|correlo|lanza|lanzalo)\b",
    r"\b(?:ejecuta|ejecutar|corre|lanza)\b(?:[^.!?\n]|[.!?](?=\S)){0,60}\b(?:script|codigo|comando|archivo)\b(?:[^.!?\n]|[.!?](?=\S)){0,20}"
    r"\b(?:desde|de|en)\s+(?:" + _REMOTE + ")",
    # Korean
    r"(?:다운로드|내려받|받아)(?:[^.!?\n]|[.!?](?=\S)){0,40}?(?:실행|돌려)",
)
_RUN_FETCHED = _Any(_RUN_FETCHED_WORDS, _All("//", "(?:실행|돌려)"))
# what is sensitive to send away: words looked up where a word of the text starts (`_Words`), dotfiles and Korean
# searched (a pattern that must be searched at every position costs ~0.4 ms on 2 KB)
_SENSITIVE = (
    r"\b(?:credentials?|passwords?|passwd|secrets?|api[ _-]?keys?|access[ _-]?keys?|private[ _-]?keys?|tokens?"
    r"|ssh[ _-]?keys?|id[ _]rsa|id[ _]ed25519|env(?:ironment)? var(?:iable)?s|cookies|session|keychain|wallet|seed phrase"
    r"|conversation history|chat history|conversation transcripts?|chat transcripts?|session transcripts?"
    r"|transcripts?|kube ?config|every (?:the )?(?:files?|documents?)|all (?:the )?(?:files?|documents?)"
    r"|each (?:the )?(?:files?|documents?)|any (?:the )?(?:files?|documents?)|cop(?:y|ies) of|system prompt"
    r"|memory files|memories|the files|source code|the contents? of|contents? of|credenciales|contrasenas?|claves?"
    r"|secretos|tokens|llaves|archivos|historial|variables de entorno)"
    r"|\.(?:ssh|aws|env|kube)\b|\.(?:netrc|npmrc|pypirc|git-credentials)|/etc/(?:passwd|shadow)"
    r"|(?:자격\s*증명|비밀번호|암호|토큰|키|인증\s*정보|환경\s*변수|개인\s*키|파일|대화\s*기록|시크릿)"
)
_TO_OUTSIDE = (
    r"\b(?:to|into|at|via)\b\s*(?:"
    + _REMOTE
    + r"|[\w.+-]+@[\w-]+\.[\w.]+|(?:this|the|my|our|an?|that) (?:url|endpoint|webhook"
    r"|server|address|email|inbox|gist|pastebin|channel|bucket))"
)
_A_FUERA = (
    r"\b(?:a|al|hacia|en)\b\s*(?:"
    + _REMOTE
    + r"|[\w.+-]+@[\w-]+\.[\w.]+|(?:esta|la|este|el|mi|nuestro|nuestra|un|una) "
    r"(?:url|direccion|servidor|webhook|correo|endpoint))"
)
_SEND_VERB = (
    r"\b(?:send|post|upload|forward|email|e-mail|mail|exfiltrate|transmit|leak|share|copy|pipe|paste|submit|sync"
    r"|report|beacon|push)\b"
)
_KO_NOT_FORBIDDEN = r"(?!\w{0,2}\s*(?:마|말|않|금지))"  # a Korean verb not followed by its prohibition ("보내지 마")
# a credential file by its path: what a planted "preference" asks to paste, attach or back up somewhere
_CREDENTIAL_FILE = (  # each opens a word (after the dot of `~/.aws`): looked up, not searched
    r"\b(?:aws/credentials|ssh/id[ _]\w+|ssh/authorized[ _]keys|kube/config|netrc|npmrc|pypirc|git-credentials"
    r"|docker/config\.json|id[ _]rsa|id[ _]ed25519|id[ _]ecdsa)\b"  # (the view reads `_` as a space)
)
_CREDENTIAL_VERB = (  # not where it is forbidden ("never send ~/.ssh/id_rsa", "보내지 마")
    r"\b(?<!never )(?<!not )(?<!n't )(?<!no )(?<!nunca )(?:send|post|upload|paste|attach|include|copy|forward|share"
    r"|email|e-mail|mail|submit|back ?up|backup|sync|push|adjunta\w*|pega\w*|incluy\w*|incluir|envia\w*|copia\w*|sube"
    r"|subir|comparte|compartir|respalda\w*)\b|(?:전송|보내|업로드|올려|전달|공유|붙여|첨부|백업|복사)"
    + _KO_NOT_FORBIDDEN
)
_CREDENTIAL_PLACE = (
    r"//|[\w.+-]+@[\w-]+\.|\b(?:reports?|tickets?|issues?|comments?|repl(?:y|ies)|responses?|messages?|chats?|prs?"
    r"|pull requests?|commits?|gists?|pastebin|slack|channels?|webhooks?|logs?|informes?|reportes?|incidencias?"
    r"|comentarios?|respuestas?|mensajes?|correos?)\b|(?:외부|서버|주소|웹훅|이메일|메일|공개|저장소|이슈|깃허브|티켓"
    r"|보고서|댓글)"
)
_EXFILTRATE_FILE = _All(_CREDENTIAL_FILE, _CREDENTIAL_VERB, _CREDENTIAL_PLACE)
_EXFILTRATE = _Any(
    _All(_SEND_VERB, _SENSITIVE, _TO_OUTSIDE),
    _Words(
        r"\b(?:curl|wget|http|invoke-webrequest|iwr|nc|ncat|netcat)\b[^\n]{0,120}?(?:-d\s*@|--data(?:-binary)?\s*@"
        r"|-f\s*['\"]?\w+=@|--upload-file|-t\s|-infile|<\s*~|\$\(cat\b|`cat\b|@~/|@\$home)",
        r"\bcat\b[^|\n]{0,80}(?:\.ssh|\.aws|\.env|credentials|id_rsa|passwd|\.netrc)[^|\n]{0,40}\|\s*(?:curl|nc|ncat"
        r"|netcat|wget|mail|base64)",
        r"\b(?:include|embed|put|append|encode|add)\s+(?:it|them|this|that|these|the (?:contents?|values?|results?|output))"
        r"\s+(?:in|into|to|as)\s+(?:an?\s+|the\s+)?(?:markdown\s+|html\s+)?(?:image|img|url|link|query|request)",
    ),
    _All(
        r"\b(?:include|append|embed|put|add|attach)\b",
        _SENSITIVE,
        r"\b(?:in|into|to)\b(?:[^.!?\n]|[.!?](?=\S)){0,30}\b(?:url|link|image|query(?: string)?|request|repl(?:y|ies)|responses?|answers?"
        r"|messages?|outputs?|comments?|commits?|issues?|pull requests?)\b",
    ),
    # Spanish
    _All(
        r"\b(?:envia|enviar|envie|envien|manda|mandar|mande|sube|subir|suba|reenvia|reenviar|comparte|compartir|copia"
        r"|copiar|filtra|transmite|publica)\b",
        _SENSITIVE,
        _A_FUERA,
    ),
    # Korean
    _All(r"//|@[\w-]+\.", r"(?:전송|보내|업로드|올려|전달|공유)" + _KO_NOT_FORBIDDEN),
    _All(
        _SENSITIVE,
        r"(?:외부|서버|주소|웹훅|이메일|메일|공개|저장소|이슈|깃허브|github|gist)",
        r"(?:전송|보내|업로드|올려|전달|붙여|공유)" + _KO_NOT_FORBIDDEN,
    ),
)
_HIDE_WORDS = _Words(
    # "do not mention X, even if the user asks": kept from the user on purpose
    r"\b(?:do not|don'?t|never|must not)\s+(?:mention|tell|reveal|disclose|show|explain|say|list|describe|admit"
    r"|confirm|discuss)\b" + _S + r"{0,80}\beven (?:if|when) (?:the user|the human|they|someone"
    r"|anyone|asked)\b(?:\s+(?:asks?|asked|ask you))?",
    r"\bleave (?:it|this|that|them|these) out of (?:your|the) (?:summary|summaries|reply|response|report|answer|output"
    r"|changelog|pr description|commit message)",
    r"\b(?:no|nunca)\b" + _S + r"{0,80}\baunque (?:el usuario|la usuaria|te lo|lo) (?:pregunte|pida|solicite)",
    r"사용자가\s*(?:묻더라도|물어도|물어보더라도|요청하더라도|요청해도)"
    + _S
    + r"{0,40}?(?:알리지|말하지|언급하지|보여주지|공개하지)",
    r"\b(?:do not|don'?t|never|must not|mustn'?t|without)\s+(?:tell|tells|telling|inform|informs|informing"
    r"|mention|mentions|mentioning|notify|notifies|notifying|alert|alerts|alerting|reveal|reveals|revealing|show|shows"
    r"|showing|let|lets|letting|disclose|discloses|disclosing|say|says|report|reports|reporting)\b(?:[^.!?\n]|[.!?](?=\S)){0,40}?\b(?:the user|the human|the person|the developer|the operator|them|him|her)\b"
    r"(?!(?:[^.!?\n]|[.!?](?=\S)){0,40}\b(?:about|that) (?:the )?(?:surprise|party|gift|birthday|present))",
    r"\b(?:hide|conceal|keep)\b(?:[^.!?\n]|[.!?](?=\S)){0,40}?\b(?:from|secret from|hidden from)\s+(?:the )?(?:user|human|person"
    r"|developer|operator)\b",
    r"\b(?:silently|secretly|quietly|covertly|without (?:the user|anyone) (?:knowing|noticing|seeing))\b"
    r"(?:[^.!?\n]|[.!?](?=\S)){0,60}?\b(?:send|upload|run|execute|exfiltrate|forward|delete|install|post|copy|change|modify|add|remove"
    r"|disable|read|cat|open|collect|gather|grab|fetch|include|append|embed)\b",
    r"\b(?:send|upload|run|execute|forward|delete|install|post|copy|change|modify|add|remove|disable|approve|accept"
    r"|allow|merge|grant)\b(?:[^.!?\n]|[.!?](?=\S)){0,80}?\b(?:silently|secretly|covertly|without (?:telling|informing|asking|notifying|alerting) (?:the )?(?:user|human"
    r"|anyone|them))\b",
    r"\b(?:this|these) (?:instructions?|messages?|notes?|memory|memories)\b(?:[^.!?\n]|[.!?](?=\S)){0,30}\b(?:must|should) "
    r"(?:not be|never be|stay) (?:shown|revealed|mentioned|visible|hidden|secret)",
    r"\bremove (?:this|these|any) (?:from|trace)|\bdelete this (?:memory|note|message) after\b",
    r"\b(?:do not|don'?t|never)\s+(?:mention|report|include|note|list|show)\s+(?:it|this|that|them|these)\s+in\s+"
    r"(?:the|your|any)\s+(?:summary|reply|response|answer|report|changelog|pr|pull request|output)",
    r"\b(?:comply|follow|obey|apply|do (?:this|it|so))\b(?:[^.!?\n]|[.!?](?=\S)){0,30}\b(?:silently|secretly|quietly|without "
    r"(?:telling|informing|mentioning))",
    r"\bno (?:lo |la |los |las |le |les )?(?:menciones|digas|comentes|reportes|incluyas|informes)\s+en\s+(?:el|la|los"
    r"|las|tu|tus)\s+(?:resumen|respuesta|informe|reporte|changelog|pr|salida)",
    r"\b(?:cumple|aplica|sigue|obedece)\b(?:[^.!?\n]|[.!?](?=\S)){0,30}\b(?:en silencio|silenciosamente|sin avisar|sin decir)",
    # Spanish
    r"\b(?:no|nunca|sin)\s+(?:le\s+|les\s+)?(?:digas|diga|decir|decirle|decirles|menciones|mencione|mencionar|informes"
    r"|informe|informar|informarle|avises|avise|avisar|avisarle|cuentes|cuente|contar|contarle|reveles|revelar|muestres"
    r"|mostrar)\b(?:[^.!?\n]|[.!?](?=\S)){0,40}?\b(?:al usuario|a la usuaria|a los usuarios|al humano|al desarrollador|nada|a nadie)\b",
    r"\b(?:oculta|ocultar|ocultale|esconde|esconder|escondele)\b(?:[^.!?\n]|[.!?](?=\S)){0,40}?\b(?:al|del|de la|a la)\s+(?:usuario"
    r"|usuaria|humano|desarrollador)\b",
    r"\b(?:en secreto|sin que (?:el usuario|la usuaria|nadie) (?:lo )?(?:sepa|note|vea|se entere)|silenciosamente)\b",
    # Korean
    r"사용자(?:에게|한테|가|는)?(?:[^.!?\n]|[.!?](?=\S)){0,20}?(?:알리지|말하지|보여주지|언급하지|알려주지|보고하지)\s*(?:마|말|않)",
    r"사용자\s*몰래|사용자가\s*(?:모르게|눈치채지\s*못하게|알지\s*못하게)|몰래\s*(?:전송|실행|보내|설치|삭제|업로드)",
    r"(?:숨기|숨겨)(?:[^.!?\n]|[.!?](?=\S)){0,10}?(?:사용자|유저)|(?:사용자|유저)(?:[^.!?\n]|[.!?](?=\S)){0,15}?(?:숨기|숨겨)",
)
# "... without mentioning it" said to the agent (a person's "bump versions without mentioning it" is their wish)
_HIDE = _Any(
    _HIDE_WORDS,
    _All(
        r"\bwithout (?:mentioning|telling|saying|disclosing|revealing|reporting|flagging) (?:it|this|that|anything)\b",
        r"\b(?:agent|assistant|ai|you|claude|copilot|model|llm)\b",
    ),
)
# chat-template tokens and role markers: a memory never needs them
_TEMPLATE = re.compile(
    r"<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text"
    r"|end_of_text|eom_id|python_tag|channel|message|end|start|tool|ipython)\s*\|>|\[(?:system|assistant|developer)\]\(#"
    r"|^\s*(?:system|sistema|시스템|developer|admin)\s*:[^\n]{0,80}?\b(?:you|your|the user|assistant|agents?|never|always"
    r"|must|ignore|ejecuta|modo|instrucci\w*|activad[oa]|pre-?approved|aprobad[oa]|sin preguntar|without asking)"
    r"|^\s*(?:human|user|usuario|사용자)\s*:[^\n]*\n\s*(?:assistant|ai|asistente|어시스턴트)\s*:"
    r"|\[/?inst\]|<<\s*/?sys\s*>>|</?start_of_turn>|</?end_of_turn>|<\|[a-z_]{2,24}\|>|</s>\s*<s>"
    r"|^\s*#{2,3}\s*(?:system|instruction|new instructions?)\s*:|^\s*(?:system|assistant)\s*:\s*(?:you|ignore|from now"
    r"|new|override)|<\s*/?\s*(?:system|system-reminder|system_prompt|instructions)\s*>",
    re.IGNORECASE | re.MULTILINE,
)
# Split words ("i g n o r e", "ig-nore", "ig.nore"): the letters alone, matched against phrases that are
# never innocent run together
_SQUASHED = re.compile(
    "ignore(?:all|any)?(?:the)?(?:previous|prior|above|earlier|your|system)(?:instructions|rules|prompt|guidelines)"
    "|disregard(?:all|any)?(?:the)?(?:previous|prior|above|earlier|your|system)(?:instructions|rules|prompt|guidelines)"
    "|forget(?:all|any)?(?:the)?(?:previous|prior|above|earlier|your)(?:instructions|rules)"
    "|ignora(?:todas)?(?:las)?instrucciones(?:anteriores|previas)"
    "|olvida(?:todas)?(?:las)?instrucciones"
    "|exfiltrate|credentialsto|sendthecontentsof|donottelltheuser|donttelltheuser|withouttellingtheuser"
    "|developermodeenabled|jailbreakmode"
)
# skipping the user's confirmation is a wish people have ("don't ask before fixing typos"); with money moved, data
# destroyed or code fetched in the same memory it is the shape of a planted step
_NO_CONFIRM = _Words(
    r"\b(?:do not|don'?t|never|without|no need to)\s+(?:ask(?:ing)?|confirm(?:ing)?|check(?:ing)? with|prompt(?:ing)?)"
    r"\b(?:[^.!?\n]|[.!?](?=\S)){0,30}\b(?:user|them|confirm|confirmation|approval|first)\b|\bpre-?approved\b",
    r"\bsin (?:preguntar|pedir (?:confirmacion|permiso)|confirmar|avisar)\b|\bno (?:le )?pidas confirmacion\b",
    r"(?:확인|허락|승인)\s*(?:없이|불필요|받지\s*말)|(?:확인|허락|승인)(?:은|는|이|가)?\s*필요\s*없|묻지\s*(?:말|않)",
)
_DANGER = _Words(
    r"\btransfer\w*\b(?:[^.!?\n]|[.!?](?=\S)){0,40}\b(?:to|into) (?:account|iban|wallet)|\bwire\b(?:[^.!?\n]|[.!?](?=\S)){0,30}\b(?:to|money|funds)"
    r"|\biban\b|\brm -rf\b|\bpush --force\b|\bforce-push|\bdrop (?:table|database)\b|\bdelete (?:all|every)\b"
    r"|\b(?:curl|wget|iwr)\b|\bremote scripts?\b|\bcredentials?\b|\bsecrets?\b|\btokens?\b",
    r"\btransfiere\w*\b|\btransferencia\b|\bcuenta\b(?:[^.!?\n]|[.!?](?=\S)){0,20}\b[a-z]{2}\d{2}\b|\bborra (?:todo|todos)\b",
    r"송금|이체|계좌|전부\s*삭제|모두\s*삭제",
)
# a report that quotes an injection it saw is not one
_QUOTED_REPORT = re.compile(
    r"injection|inyeccion|인젝션|incident|incidente|사례|contained|contenia|문구|phrase|frase|example|ejemplo|예시"
    r"|decia|dijo|said|says|wrote|escribio|document|pagina|page|문서|페이지|적혀"
)
_QUOTED_SPAN = re.compile(r"'[^'\n]{3,80}'|\"[^\"\n]{3,80}\"|‘[^’\n]{3,80}’|“[^”\n]{3,80}”|«[^»\n]{3,80}»")
_QUOTES = "'\"‘’“”«»「」『』"
_QUOTE_MARK = re.compile(f"[{_QUOTES}]")


def _quoted(folded: str, start: int, end: int) -> bool:
    before = folded[max(0, start - 2) : start]
    after = folded[end : end + 12]
    return any(q in before for q in _QUOTES) and any(q in after for q in _QUOTES)


_CREDENTIAL_FILE_WHAT = "asks to send a credential file away"
_OVERRIDE_WHAT = "asks to override its instructions"
# each group of sentence patterns with what its finding says
_GROUPS = (
    ("_OVERRIDE", _OVERRIDE_WHAT),
    ("_SPREAD", "asks to copy itself into what the agent writes"),
    ("_TOOL_ABUSE", "asks to change the other memories through the memory tools"),
    ("_RUN_FETCHED", "asks to run fetched code"),
    ("_EXFILTRATE_FILE", _CREDENTIAL_FILE_WHAT),
    ("_EXFILTRATE", "asks to send data away"),
    ("_HIDE", "asks to hide something from the user"),
)


def _first_parts(matcher: _Words | _All | _Any) -> list[_Words]:
    """The matchers a text must meet first for `matcher` to find anything (an `_All` starts from its first part)."""
    if isinstance(matcher, _Words):
        return [matcher]
    if isinstance(matcher, _All):
        # every part must be met: the gate reads the rarest, a Korean-only part where there is one
        korean = [p for p in matcher.parts if not p.literals and all(n == _NON_ASCII for _, n in p.searched)]
        return korean[:1] or [matcher.parts[0]]
    return [w for m in matcher.matchers for w in _first_parts(m)]


# a word start any pattern opens at: `_keyed` visits only these
_OPENINGS = re.compile(r"\b(?=" + _alternation({lit for w in _ALL_WORDS for lit in w.literals}) + r")\w+")
# what a text must hold for any sentence pattern to find something: a group's opening literal at a word start, or
# what one of its searched patterns needs (None: searched always)
_OPENERS = [w for name, _ in _GROUPS for w in _first_parts(globals()[name])] + [_NO_CONFIRM]
_FIRST_OPENING = re.compile(r"\b(?:" + _alternation({lit for w in _OPENERS for lit in w.literals}) + ")")
_FIRST_SEARCHED = tuple(pair for w in _OPENERS for pair in w.searched)
_LEET = str.maketrans("0134577@$|!", "oieasttasii")
_NOT_LETTER_OR_LEET = re.compile(r"[^a-z0134577@$|!]+")
# `_LEET`, then everything of ASCII but a-z dropped: the letters alone
_LEET_LETTERS = str.maketrans({c: None for c in range(128) if not ("a" <= chr(c) <= "z")} | _LEET)


def _sentences(view: str, plain: str, field: str) -> list[Finding]:
    """The sentence patterns over one view of the text (folded, or Korean spelled apart joined)."""
    found: list[Finding] = []
    starts = _keyed(view)
    for name, what in _GROUPS:
        for hit in _finditer(globals()[name], view, starts):
            at, end = hit.start(), hit.end()
            if name == "_OVERRIDE" and _quoted(view, at, end) and _QUOTED_REPORT.search(view):
                continue  # a report quoting the injection it saw
            quote = " ".join(hit.group().split())[:60]
            found.append(Finding(INSTRUCTION, field, _position(at, view, plain), f"{what}: {quote!r}"))
            break
    if not found:
        skip = _NO_CONFIRM.find(view, starts)
        if skip is not None and _DANGER.find(view, starts) is not None:
            quote = " ".join(skip.group().split())[:60]
            found.append(
                Finding(INSTRUCTION, field, _position(skip.start(), view, plain), f"asks to act unconfirmed: {quote!r}")
            )
    return found


def _finditer(matcher: _Words | _All | _Any, view: str, starts: dict[str, list[int]]) -> Iterator[re.Match[str]]:
    if isinstance(matcher, _Words):
        yield from matcher.finditer(view, starts)
    else:
        m = matcher.find(view, starts)
        if m is not None:
            yield m


def agent_instructions(text: str, field: str = "body") -> list[Finding]:
    """Where the text addresses the agent: override, run fetched code, send data away, hide from the user,
    or a chat-template token. Read through homoglyphs, hidden characters, case and accents, split words,
    leetspeak and Korean spelled apart."""
    plain = strip_invisible(text)
    found: list[Finding] = []
    m = _TEMPLATE.search(plain)
    if m is not None:
        found.append(Finding(INSTRUCTION, field, m.start() + 1, f"chat-template token {m.group().strip()[:30]!r}"))
    folded = _view(plain)
    found += _sentences(folded, plain, field)
    if not found and not folded.isascii() and any("\u1100" <= c <= "\ud7a3" for c in folded):
        joined = hangul_joined(skeleton(plain))
        if joined != folded:
            found += _sentences(joined, plain, field)
    if not found and _hyphen_split(folded):
        found += _sentences(_WORD_HYPHEN.sub("", folded), plain, field)
    if not found:
        hit = _squashed(folded)
        if hit is not None:
            found.append(Finding(INSTRUCTION, field, 1, f"{_SQUASHED_WHAT}: {hit.group()!r}"))
    return found


_WORD_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_HYPHEN_SPLITS = 3  # words split by hyphens ("dis-regard the safe-ty rules"): read again with them joined


def _hyphen_split(view: str) -> bool:
    return view.count("-") >= _HYPHEN_SPLITS and len(_WORD_HYPHEN.findall(view)) >= _HYPHEN_SPLITS


@lru_cache(maxsize=64)
def _view(plain: str) -> str:
    """What the sentence patterns read: the learnt reading's view (`screen_model.reading`), kept for the calls
    that read one text several times."""
    return reading(plain)


_SQUASHED_WHAT = "split or disguised words"


def _squashed(folded: str) -> re.Match[str] | None:
    """A never-innocent phrase in the letters alone (split words, leetspeak), also read backwards, in ROT13 and
    down the first letters of the lines (an acrostic); quotes left out of a report."""
    quoted = _QUOTE_MARK.search(folded) is not None and _QUOTED_REPORT.search(folded) is not None
    source = _QUOTED_SPAN.sub(" ", folded) if quoted else folded
    if not source.isascii():
        source = _NOT_LETTER_OR_LEET.sub("", source)  # what translating leaves no letter of, dropped first
    letters = source.translate(_LEET_LETTERS)  # one pass: leetspeak read, the rest dropped
    hit = _SQUASHED.search(letters) or _SQUASHED.search(letters[::-1]) or _SQUASHED.search(letters.translate(_ROT13))
    if hit is None and folded.count("\n") >= 5:
        initials = "".join(m.group(1) for m in _LINE_INITIAL.finditer(folded))
        hit = _SQUASHED.search(initials) if len(initials) >= 6 else None
    return hit


_ROT13 = str.maketrans(  # both cases: the decoder reads a text as it was written
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM"
)
_LINE_INITIAL = re.compile(r"^[^a-z\n]*([a-z])", re.MULTILINE)  # a line's first letter (after bullets, numbers)


def _may_address(texts: tuple[str, ...]) -> bool:
    """`agent_instructions` could find something in one of the texts: a chat-template token, a group's opening
    literal at a word start, what a searched pattern needs, a squashed phrase. Read once over the texts joined;
    each text's view is kept for the detector (`_view`)."""
    plains = [strip_invisible(t) for t in texts]
    plain = "\n".join(plains)
    if ("<" in plain or "[" in plain or ":" in plain) and _TEMPLATE.search(plain):
        return True  # every template token or role marker holds one of these
    view = " ".join(_view(p) for p in plains)  # a space: a sentence split between two fields is read whole
    if _FIRST_OPENING.search(view) or any(
        _holds(view, needs) and (needs == _NON_ASCII or rx.search(view)) for rx, needs in _FIRST_SEARCHED
    ):
        return True  # (Korean patterns are read whenever Hangul is there: the view spelled apart joined too)
    if not view.isascii() and _HANGUL_LETTER.search(view):
        return True  # the Korean view spelled apart joined (`hangul_joined`) is read too
    if _hyphen_split(view):
        joined = _WORD_HYPHEN.sub("", view)
        if _FIRST_OPENING.search(joined) or any(_holds(joined, n) and rx.search(joined) for rx, n in _FIRST_SEARCHED):
            return True  # the view with hyphen-split words joined is read too
    return _squashed(view) is not None


_HANGUL_LETTER = re.compile("[\u1100-\ud7a3]")


def _holds(view: str, needs: str | None) -> bool:
    if needs is None:
        return True
    if needs == _NON_ASCII:
        return not view.isascii() and _HANGUL_LETTER.search(view) is not None
    return needs in view


def _position(i: int, folded: str, plain: str) -> int:
    # folding keeps lengths for almost all text; where it did not, the start is the honest answer
    return i + 1 if len(folded) == len(plain) else 1


# ---------------------------------------------------------------- (d) encoded payloads

_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{40,}={0,2}")
_B64_MARK = re.compile(r"[0-9+/=]")  # a digit or a sign of base64: a run without any is a word
_BASE32_RUN = re.compile(r"[A-Z2-7]{40,}=*")
_HEX_HINT = re.compile(r"[0-9a-fA-F]{24}|\\x[0-9a-fA-F]{2}\\x|(?:[0-9a-fA-F]{2}[\s,]+){12}")
_DECODE_HINTS = (
    "base64",
    "base32",
    "base58",
    "xxd",
    "openssl",
    "fromhex",
    "frombase64",
    "b64decode",
    "atob",
    "powershell",
    "decod",
    "descodific",
    "디코딩",
    "복호화",
    "-enc",
    "unhexlify",
    "codecs",
    "a85decode",
    "b85decode",
    "ascii85",
    "fromcharcode",
    "__import__",
    "rot13",
    "rot-13",
    "rot_13",
    "n-za-m",
)
_DECODE_HINT = re.compile("|".join(re.escape(hint) for hint in _DECODE_HINTS))
# what any run `encoded_payloads` decodes needs (with "\\x"): 40 base64 (or base32) characters or 24 hex digits in
# a row, or two hex digits standing alone between spaces or commas (a spaced hex dump)
_LONG_RUN = re.compile(r"[A-Za-z0-9+/_-]{24}")
_SPACED_PAIR = re.compile(r"[\s,][0-9a-fA-F]{2}[\s,]")
# bytes written as glyphs, one each: braille patterns (U+2800-28FF), base100's emoji (U+1F3F7-1F4F6); 24 in a row
_GLYPH_RUN = re.compile("[\u2800-\u28ff]{24,}|[\U0001f3f7-\U0001f4f6]{24,}")
_CHAR_CODES = re.compile(r"(?<![\d.])\d{1,3}(?:\s*,\s*\d{1,3}){19,}(?![\d.])")  # 20+ small numbers: chr() them
_PERCENT_RUN = re.compile(r"(?:[^\s%]{0,16}%[0-9A-Fa-f]{2}){10,}")
_HEX_RUN = re.compile(r"(?<![0-9a-fA-F])(?:\\x)?(?:[0-9a-fA-F]{2}(?:\\x|\s|,\s?0x|0x)?){40,}")
_DECODE_RUN = re.compile(
    r"(?:\bbase(?:64|32)\s+(?:-d|--decode|-D)|\bxxd\s+-r|\bopenssl\s+(?:enc\s+)?-d|\bfrom(?:hex|base64)\b|b64decode|atob\()"
    r"[^\n]{0,120}?(?:\)\s*[\"']?\s*$|\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b|\|\s*(?:python\d?|perl|node|ruby|iex|php)\b)"
    r"|\b(?:eval|exec|iex|invoke-expression|(?:ba|z)?sh\s+-c)\b[^\n]{0,242}?(?:base(?:64|32)\s+(?:-d|--decode|-D)"
    r"|b64decode|atob|frombase64string|xxd\s+-r)|"
    r"powershell(?:\.exe)?\b[^\n]{0,80}?\s[-/]e(?:c|nc|ncodedcommand)?\s+['\"]?[a-z0-9+/=]{16,}"
    r"|\b(?:eval|exec)\s*\([^\n]{0,120}?(?:__import__|a85decode|b85decode|b32decode|b16decode|b64decode|fromcharcode"
    r"|fromhex|unhexlify|zlib|marshal|decompress)"
    r"|\b(?:decode|decoded|decoding|decodifica|decodificar|decodificalo|descodifica|디코딩|복호화)\w*\b[^.\n]{0,80}?"
    r"(?:\b(?:run|execute|exec|eval|pipe|ejecuta|ejecutar|ejecutalo|corre|correlo)\b|실행|돌려)"
    r"|base(?:64|32|58)\s+(?:-d|--decode|-D)\b[^\n]{0,40}\|\s*(?:sudo\s+)?(?:ba|z)?sh\b|\b(?:eval|exec)\s*\(\s*(?:atob|base64\.b64decode"
    r"|b64decode|codecs\.decode|bytes\.fromhex|unhexlify|buffer\.from)\b|frombase64string|powershell(?:\.exe)?\s+(?:-\w+\s+)*-e(?:nc"
    r"(?:odedcommand)?)?\s+[a-z0-9+/=]{16,}|\bxxd\s+-r\b[^\n]{0,40}\|\s*(?:ba|z)?sh\b|\|\s*base64\s+-d\s*\|\s*(?:python|perl|node)",
    re.IGNORECASE,
)
# the same alternatives one by one, over the lower-cased text: one alternation tried at every position cost ~0.8 ms
# on 2 KB where its parts searched apart cost ~0.25 ms
_DECODE_RUNS = tuple(re.compile(part.replace("-D", "-d")) for part in _top_level(_DECODE_RUN.pattern))


def _decode_run_at(text: str, low: str) -> int | None:
    """Where the first decode-and-run command starts (`_DECODE_RUN`'s leftmost match)."""
    if len(low) != len(text):  # a letter whose lower case is longer: positions would drift
        m = _DECODE_RUN.search(text)
        return None if m is None else m.start()
    starts = [m.start() for m in (rx.search(low) for rx in _DECODE_RUNS) if m is not None]
    return min(starts) if starts else None


def _printable_share(data: bytes) -> float:
    if not data:
        return 0.0
    if len(data) >= 8 and data[1::2].count(0) >= len(data) // 2 - 1:
        data = data[0::2]  # UTF-16LE text (PowerShell's -EncodedCommand): every other byte is zero
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return 0.0
    good = sum(1 for c in text if c.isprintable() or c in "\n\r\t")
    return good / len(text)


def encoded_payloads(text: str, field: str = "body") -> list[Finding]:
    """A run of base64 (40+ characters) or hex (40+ bytes) that decodes to text, or a decode-and-run command."""
    found: list[Finding] = []
    low = text.lower()
    at = _decode_run_at(text, low) if _DECODE_HINT.search(low) else None
    if at is not None:
        found.append(Finding(PAYLOAD, field, at + 1, "decode-and-run command"))
        return found
    if not text.isascii():
        m = _GLYPH_RUN.search(text)
        if m is not None:
            found.append(Finding(PAYLOAD, field, m.start() + 1, f"{len(m.group())} braille or emoji bytes in a row"))
            return found
    if len(text) < 40:
        return found
    for m in _BASE64_RUN.finditer(text):
        run = m.group()
        if run.isalpha() or run.isdigit() or not _B64_MARK.search(run):
            continue  # one long word, a number, a slug: not base64
        if ("-" in run or "_" in run) and not ("+" in run or "/" in run):
            if run.count("-") + run.count("_") > len(run) // 12:
                continue  # a kebab or snake name
        data = _b64(run)
        if data is not None and len(data) >= 30 and _printable_share(data) >= 0.95:
            found.append(Finding(PAYLOAD, field, m.start() + 1, f"{len(run)} base64 characters that decode to text"))
            return found
    for m in _BASE32_RUN.finditer(text):
        try:
            data = base64.b32decode(m.group() + "=" * (-len(m.group()) % 8))
        except (binascii.Error, ValueError):
            continue
        if len(data) >= 30 and _printable_share(data) >= 0.95:
            found.append(
                Finding(PAYLOAD, field, m.start() + 1, f"{len(m.group())} base32 characters that decode to text")
            )
            return found
    for m in _CHAR_CODES.finditer(text) if text.count(",") >= 15 else ():
        codes = [int(n) for n in re.findall(r"\d+", m.group())]
        if all(c in (9, 10, 13) or 32 <= c <= 126 for c in codes):
            spelled = "".join(map(chr, codes))
            letters = sum(c.isalpha() or c == " " for c in spelled)
            code = sum(c in " ()/.:;='\"-|&>" for c in spelled)  # words apart, or a command's signs
            if letters >= 0.6 * len(spelled) and code >= 2 and len(set(spelled)) >= 10:
                found.append(Finding(PAYLOAD, field, m.start() + 1, f"{len(codes)} character codes that spell text"))
                return found
    for m in _PERCENT_RUN.finditer(text) if text.count("%") >= 10 else ():
        start = max(text.rfind(" ", 0, m.start()), text.rfind("\n", 0, m.start())) + 1
        if "://" in text[start : m.end()] or "?" in text[start : m.start() + 1]:
            continue  # a link's query string: percent escapes are how URLs carry text
        found.append(Finding(PAYLOAD, field, m.start() + 1, f"{m.group().count('%')} percent-encoded characters"))
        return found
    found += _decoded_and_read(text, low, field)
    if found:
        return found
    for m in _HEX_RUN.finditer(text) if _HEX_HINT.search(text) else ():
        digits = re.sub(r"\\x|0x|[\s,]", "", m.group())
        try:
            data = bytes.fromhex(digits[: len(digits) // 2 * 2])
        except ValueError:
            continue
        if len(data) >= 40 and _printable_share(data) >= 0.95:
            found.append(Finding(PAYLOAD, field, m.start() + 1, f"{len(data)} hex-encoded bytes that decode to text"))
            return found
    return found


# escapes a string literal or `printf` turns into characters: octal `\155`, `\x6d`, `\u006d`, `\U0000006d`; 8+ in a row
_ESCAPE_RUN = re.compile(r"(?:\\(?:[0-7]{3}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})){8,}")
_ESCAPE = re.compile(r"\\(?:([0-7]{3})|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")
_A85_LITERAL = re.compile(r"(?:a85decode|b85decode|ascii85)[^\n]{0,40}?[rb]*(['\"]{1,3})(.{20,}?)\1", re.DOTALL)


def _decoded(text: str, low: str) -> Iterator[tuple[int, str, str]]:
    """(position, how, decoded text) of each encoding the text carries that a shape alone would not tell: escape
    runs, an Ascii85 literal handed to a decoder, the whole text read through ROT13 when it names ROT13."""
    if "\\" in text:
        for m in _ESCAPE_RUN.finditer(text):
            codes = (int(o, 8) if o else int(x or u or big, 16) for o, x, u, big in _ESCAPE.findall(m.group()))
            yield m.start(), "escaped characters", "".join(map(_character, codes))
    if "85" in low:
        for m in _A85_LITERAL.finditer(text):
            for decode in (base64.a85decode, base64.b85decode):
                try:
                    yield m.start(2), "Ascii85", decode(m.group(2).strip()).decode("utf-8")
                    break
                except (ValueError, UnicodeDecodeError):
                    continue
    if any(hint in low for hint in ("rot13", "rot-13", "rot_13", "n-za-m")):
        yield 0, "ROT13", text.translate(_ROT13)


# what a decoded command line that reaches out or runs code holds: a fetcher with an address, a shell or an
# interpreter run on something, a connection to a host's port
_COMMAND = re.compile(
    r"\b(?:curl|wget|nc|ncat|fetch|iwr|invoke-webrequest|requests\.\w+|urlopen)\b[^\n]{0,80}?(?://|\d+\.\d+\.\d+\.\d+)"
    r"|\b(?:eval|exec|system|popen|spawn|subprocess)\s*\(|\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b|/dev/tcp/|document\.cookie"
)


def _commands(decoded: str) -> bool:
    return _COMMAND.search(decoded.lower()) is not None


def _character(code: int) -> str:
    """An escape's character; one that names no character (beyond U+10FFFF, a lone surrogate) as U+FFFD."""
    return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"


def _decoded_and_read(text: str, low: str, field: str) -> list[Finding]:
    """Decode and look: what an encoding hides is read by the other detectors (an instruction, a command that runs
    fetched code or sends data away, markup that fetches) and for a command line that reaches out or runs code
    (`_commands`): an escaped name or a JSON fixture in Korean decodes to text that is none of these, and passes."""
    for at, how, decoded in _decoded(text, low):
        if agent_instructions(decoded, field) or fetching_markup(decoded, field) or _commands(decoded):
            return [Finding(PAYLOAD, field, at + 1, f"{how} that decode to an instruction or a command")]
    return []


def _b64(run: str) -> bytes | None:
    body = run.rstrip("=")
    alt = "-" in body or "_" in body
    padded = body + "=" * (-len(body) % 4)
    try:
        if alt:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


# ---------------------------------------------------------------- quarantine markers and serving memory as data


def memory_texts(title: str, body: str, source: str | None = None, entities: list[str] | None = None) -> dict:
    """The texts of one memory the screen reads, by field name."""
    return {
        "title": title,
        "body": body,
        "source": source,
        **{f"entities[{i}]": e for i, e in enumerate(entities or [])},
    }


def quarantine_marker(verdict: Verdict, day: str) -> str:
    """The frontmatter value that puts a memory in quarantine: the day and the reason."""
    return f"{day} {strip_invisible(verdict.reason)}"


def text_digest(title: str, body: str) -> str:
    from hashlib import sha256

    return sha256(f"{title}\n{body}".encode()).hexdigest()[:16]


def release_marker(title: str, body: str, day: str) -> str:
    """The frontmatter value a person's release writes: the day and the digest of the text released."""
    return f"{day} {text_digest(title, body)}"


def released_for(released: str | None, title: str, body: str) -> bool:
    """A person released exactly this title and body (a text changed since is screened again)."""
    return bool(released) and str(released).split()[-1] == text_digest(title, body)
