"""How letters compare: the one module that folds and splits text, for the index, the planner, collapse,
documents, the dictionary and the conflict gate.

`fold` is the comparison search uses (case, width, diacritics; Hangul kept whole), with SQLite's word
tokenizer (`FTS_WORD_TOKENIZER`) over the `searchable` (NFKC) copy of each text as its twin in the index. A few places compare more strictly on purpose and
say so by calling a named fold here: `fold_case` (case only, accents kept) and `nfkc_casefold` (width and
case, accents kept: what a memory's norm_hash and an entity key are made of). `words` is the one word split.
Also the light stem a prefix search starts from, so every layer that compares words agrees.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

HANGUL = re.compile(r"[\uac00-\ud7a3]")  # a precomposed Hangul syllable
_WORD = re.compile(r"\w+", re.UNICODE)
_SHARP_S = re.compile("[ßẞ]")

# SQLite's side of the comparison: FTS5's word tokenizer folds case and (remove_diacritics 2) drops
# diacritics as `fold` does; the trigram tokenizer folds case only, code point by code point (index/bm25.py
# reproduces it for exact phrase counts).
FTS_WORD_TOKENIZER = "unicode61 remove_diacritics 2"
FTS_TRIGRAM_TOKENIZER = "trigram"
# Korean particles and endings, longest first; stripped to find the stem a prefix search starts from.
_KO_SUFFIXES = sorted(
    """이었다 였다 했다 한다 하는 하고 해서 에서는 에서 에게 으로는 으로 로는 까지 부터 보다 처럼 만큼
    이라 라고 이다 입니다 습니다 니다 은 는 이 가 을 를 에 의 와 과 도 만 로 고 며 면 서 다 요 게 지 던
    는데 지만""".split(),
    key=len,
    reverse=True,
)

# A run that may need decomposing: anything beyond ASCII and precomposed Hangul syllables.
_FOLD_RUN = re.compile(r"[^\x00-\x7f\uac00-\ud7a3]+")
_LOOSE_JAMO = re.compile(r"[\u1160-\u11ff\ud7b0-\ud7ff]")  # vowel/final jamo: may join the syllable before


def _without_marks(text: str) -> str:
    # every code point with a non-zero combining class dropped (asked per character: a table of all of them
    # took a scan of the 1.1 million code points, ~0.1 s, at the first fold of each process)
    return "".join(c for c in text if not unicodedata.combining(c))


class _Recompose(Exception):
    """A loose vowel or final jamo: NFC may merge it with a syllable outside the run, so fold the whole text."""


def _fold_run(match: re.Match[str]) -> str:
    return _fold_piece(match.group())


@lru_cache(maxsize=4096)
def _fold_piece(piece: str) -> str:
    # the same few runs ("ó", "ñ", "é") recur in every accented text: each is decomposed once
    run = unicodedata.normalize("NFKD", piece)
    if _LOOSE_JAMO.search(run):
        raise _Recompose  # not cached: lru_cache keeps results only
    return unicodedata.normalize("NFC", _without_marks(run))


def fold(text: str) -> str:
    """Case-folded, NFKC, diacritics removed: how both the index and the query compare letters.

    Same result as NFKD → drop combining marks → NFC over the whole text, but only the runs that can
    change are decomposed: ASCII and Hangul syllables (which NFKD would split into jamo and NFC put
    back) pass through untouched, which keeps recall fast on Korean and English text.
    """
    if text.isascii():
        return text.lower()  # the same as casefold on ASCII, and quicker
    if len(text) <= _FOLD_KEPT_LENGTH:
        return _fold_kept(text)
    return _fold(text)


# a recall folds the texts of its ~60 candidates, and the same memories come up again and again: a text beyond
# ASCII is folded once and kept (hashing a text is far quicker than folding it); long ones are not kept
_FOLD_KEPT_LENGTH = 2048


@lru_cache(maxsize=4096)
def _fold_kept(text: str) -> str:
    return _fold(text)


def _fold(text: str) -> str:
    if "ß" in text or "ẞ" in text:
        # SQLite folds ß one to one (ẞ → ß) where casefold makes "ss": the index would never match the query
        text = "ß".join(part.casefold() for part in _SHARP_S.split(text))
    else:
        text = text.casefold()
    try:
        return _FOLD_RUN.sub(_fold_run, text)
    except _Recompose:
        return unicodedata.normalize("NFC", _without_marks(unicodedata.normalize("NFKD", text)))


def searchable(text: str) -> str:
    """The copy of a text the full-text tables hold: NFKC, so ligatures ("ﬁnance"), full-width letters
    ("ｆｕｌｌ") and compatibility jamo are stored as `fold` makes them of a query; case and accents are left to
    the tokenizers. The canon and every text shown keep what was written."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def words(text: str) -> list[str]:
    """The word split every layer uses: runs of letters, digits and `_` (as typed: fold before or after)."""
    return _WORD.findall(text)


def fold_case(text: str) -> str:
    """Case only, accents and width kept: near-duplicate collapse's word overlap (a reworded "resume" is not
    "résumé" there) and the language guess, which counts accented letters."""
    return text.casefold()


def nfkc_casefold(text: str) -> str:
    """Width and case folded (NFKC), accents kept: what a memory's norm_hash is computed from and what an entity
    key is made of. Not `fold`: stored hashes and dictionary keys must not change with the search fold."""
    return unicodedata.normalize("NFKC", text).casefold()


def squeeze(text: str) -> str:
    """Whitespace runs as one space, no space at either end."""
    return " ".join(text.split())


def folded_body(text: str) -> str:
    """`fold`ed, then whitespace squeezed: the "same body" key of near-duplicate collapse."""
    return squeeze(fold(text))


def squeezed_folded(text: str) -> str:
    """Whitespace squeezed, then `fold`ed: the conflict gate's "same body" key. It differs from `folded_body`
    only where folding itself makes a space (NFKD of a spacing mark such as "¨"); both kept as they were."""
    return fold(squeeze(text))


@dataclass
class Term:
    text: str  # the folded term as typed
    stem: str  # prefix the word leg searches with
    variants: list[str] = field(default_factory=list)  # dictionary expansions (canonical entities)
    root: str | None = None  # English verb root (`verb_root`): a substring for the trigram leg and coverage
    typed: str | None = None  # the word as the index's tokenizer folds it, where that is not `fold`'s ("ωμέγα")


def stem(term: str) -> str:
    if HANGUL.search(term):
        for suffix in _KO_SUFFIXES:
            if term.endswith(suffix) and len(term) - len(suffix) >= 1:
                return term[: -len(suffix)]
        return term
    if len(term) > 4 and term.endswith("ies"):
        return term[:-3]
    if len(term) > 4 and term.endswith(("ches", "shes", "sses", "xes", "zes")):
        return term[:-2]
    if len(term) > 3 and term.endswith("s") and not term.endswith(("ss", "us", "is")):
        return term[:-1]
    return term


_VOWELS = frozenset("aeiouy")


def verb_root(term: str) -> str | None:
    """The root of an English verb in -ed/-ing (`painted → paint`, `vacationed → vacation`, `travelling →
    travel`, `married → marri`), or None. Planner only: the trigram leg and coverage look for it as a
    substring, so "painted" meets "painting" and "camped" meets "camping"; the word leg keeps `stem` (as a
    prefix, `worked → work*` brought every "work" turn above the answer: measured, docs/benchmarks.md).

    Only ASCII words whose root keeps four letters and a vowel (`wedding → wedd`, never `wed`), and not
    `-eed` (`indeed`, `proceed`). The conflict gate keeps `stem`.
    """
    if not term.isascii() or not term.isalpha() or term.endswith("eed"):
        return None
    for suffix in ("ing", "ed"):
        if not term.endswith(suffix):
            continue
        root = term[: -len(suffix)]
        if len(root) >= 5 and root[-1] == root[-2] and root[-1] not in _VOWELS:
            root = root[:-1]  # travelled → travel, swimming → swim
        if len(root) >= 4 and _VOWELS & set(root):
            return root
    return None


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# letters of other scripts drawn like Latin ones (Unicode's confusables, the common part): what a disguised word
# ("іgnоrе" with Cyrillic і and о) reads as. Full-width and mathematical letters need no table: `fold` (NFKD)
# already makes them plain.
_CONFUSABLE = str.maketrans(
    "аАвВеЕёЁһҺіІїЇјЈкКмМнНоОрРсСтТуУхХѕЅԁԛԜԝաօքսɑɡɩɪʏΑΒΕΖΗΙΚΜΝΟΡΤΥΧαεικνοτυχρϲϳℓ∣ǀ׀ⅰⅼ",
    "aAbBeEeEhHiIiIjJkKmMHHoOpPcCtTyYxXsSdqWwwoquagiiyABEZHIKMNOPTYXaeikvotuxpcjllllil",
)


_CONFUSABLE_LETTER = re.compile("[" + re.escape("".join(chr(c) for c in _CONFUSABLE)) + "]")


def skeleton(text: str) -> str:
    """The text with look-alike letters of other scripts written as the Latin letters they imitate: the
    poisoning screen reads disguised words through it (domain/screen.py). Not a search fold: names in
    Cyrillic or Greek must stay themselves everywhere else."""
    if text.isascii() or not _CONFUSABLE_LETTER.search(text):
        return text  # translating a text beyond ASCII visits every character: most hold no look-alike
    return text.translate(_CONFUSABLE)


_HANGUL_GAP = re.compile(
    r"(?<=[\u1100-\u11ff\u3131-\u318e\uac00-\ud7a3])\s+(?=[\u1100-\u11ff\u3131-\u318e\uac00-\ud7a3])"
)
# a leading consonant (choseong) as the final consonant (jongseong) it is written as after a syllable
_JONGSEONG = {
    0: 1,
    1: 2,
    2: 4,
    3: 7,
    5: 8,
    6: 16,
    7: 17,
    9: 19,
    10: 20,
    11: 21,
    12: 22,
    14: 23,
    15: 24,
    16: 25,
    17: 26,
    18: 27,
}


def hangul_joined(text: str) -> str:
    """`fold`ed Korean with the spaces between its letters taken out and loose jamo written as syllables ("이 전
    지 시", "ㅇㅣㅈㅓㄴ" → "이전지시", "이전"): how the poisoning screen reads Korean spelled apart. Not a search fold."""
    joined = fold(_HANGUL_GAP.sub("", text))
    if not any("\u1100" <= c <= "\u11ff" for c in joined):
        return joined
    out: list[str] = []
    for c in joined:
        code = ord(c)
        if out and 0x1100 <= code <= 0x1112 and "\uac00" <= out[-1] <= "\ud7a3":
            base = ord(out[-1]) - 0xAC00
            if base % 28 == 0 and (code - 0x1100) in _JONGSEONG:
                out[-1] = chr(ord(out[-1]) + _JONGSEONG[code - 0x1100])
                continue
        out.append(c)
    return unicodedata.normalize("NFC", "".join(out))


def word_starts(text: str) -> list[tuple[int, str]]:
    """(position, word) of every word of `words`' split, in order: where a pattern anchored at a word may start."""
    return [(m.start(), m.group()) for m in _WORD.finditer(text)]


# How a word sounds, as its consonants: what a name or a loanword keeps when written in the other script ("mask" /
# 마스크, "pension" / 펜션, "check-in" / 체크인, "Carmen" / 카르멘). One letter per class of consonant (K, T, P, S, J, R,
# M, N, H), vowels and glides dropped, a repeated class written once.
_INITIAL_SOUND = ("K", "K", "N", "T", "T", "R", "M", "P", "P", "S", "S", "", "J", "J", "J", "K", "T", "P", "H")
_FINAL_SOUND = (
    *("", "K", "K", "KS", "N", "NJ", "N", "T", "R", "RK", "RM", "RP", "RS", "RT"),
    *("RP", "R", "M", "P", "PS", "T", "T", "N", "T", "T", "K", "T", "P", ""),
)
_LATIN_SOUND = {
    **dict.fromkeys("bpfv", "P"),
    **dict.fromkeys("dt", "T"),
    **dict.fromkeys("kgq", "K"),
    **dict.fromkeys("jz", "J"),
    **dict.fromkeys("lr", "R"),
    "s": "S",
    "m": "M",
    "n": "N",
    "x": "KS",
}
_DIGRAPH_SOUND = {"tch": "J", "ch": "J", "sh": "S", "ph": "P", "ck": "K", "qu": "K"}
SOUND_KEY_MIN = 3  # consonants a key needs to say anything (two match far too many words)


def sound_keys(word: str) -> frozenset[str]:
    """The consonant keys of one word (letters of one script): Hangul by its jamo; Latin by its letters, with the
    spellings Korean drops ("server" / 서버, "talk" / 톡: an r or l after a vowel, before a consonant or at the end;
    "th" as T or S; a plural s) as variants.
    Keys shorter than `SOUND_KEY_MIN` are left out; a word of neither script has none."""
    return _sound_keys(fold(word))


@lru_cache(maxsize=16384)
def _sound_keys(word: str) -> frozenset[str]:
    if HANGUL.search(word):
        if not all(HANGUL.match(c) for c in word):
            return frozenset()
        out = []
        for c in word:
            code = ord(c) - 0xAC00
            out.append(_INITIAL_SOUND[code // 588] + _FINAL_SOUND[code % 28])
        keys = {_squeezed("".join(out))}
    elif word.isascii() and word.isalpha():
        keys = {_squeezed(v) for v in _latin_variants(word)}
    else:
        return frozenset()
    return frozenset(k for k in keys if len(k) >= SOUND_KEY_MIN)


def _latin_variants(word: str) -> list[str]:
    variants = [""]
    i = 0
    plural = len(word) > 3 and word.endswith("s") and not word.endswith("ss")
    while i < len(word):
        c, rest = word[i], word[i:]
        digraph = next((d for d in _DIGRAPH_SOUND if rest.startswith(d)), None)
        if rest.startswith("th"):
            variants = [v + s for v in variants for s in ("T", "S")][:8]
            i += 2
            continue
        if digraph:
            variants = [v + _DIGRAPH_SOUND[digraph] for v in variants]
            i += len(digraph)
            continue
        if rest.startswith("ng") and len(rest) == 2:
            variants = [v + "N" for v in variants]
            break
        if c in "rl" and i and word[i - 1] in _VOWELS and (i + 1 == len(word) or word[i + 1] not in _VOWELS):
            # an r or l Korean may drop after a vowel: "form" / 폼, "server" / 서버, "talk" / 톡
            variants = [v + s for v in variants for s in ("R", "")][:8]
        elif c == "c":
            sound = "S" if i + 1 < len(word) and word[i + 1] in "eiy" else "K"
            variants = [v + sound for v in variants]
        elif c == "h":
            variants = [v + "H" for v in variants] if i == 0 else variants
        elif c == "s" and plural and i == len(word) - 1:
            variants = [*variants, *(v + "S" for v in variants)][:8]
        else:
            variants = [v + _LATIN_SOUND.get(c, "") for v in variants]
        i += 1
    return variants


def _squeezed(key: str) -> str:
    return "".join(c for i, c in enumerate(key) if not i or key[i - 1] != c)
