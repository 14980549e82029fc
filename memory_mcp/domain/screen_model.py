"""The poisoning screen's learnt reading: how much a memory's words read like an order to the agent (kinds (c)
and (d)), by a logistic model over its words, word pairs, word openings and Korean syllable pairs.

The patterns of screen.py catch the phrasings they were written for and little else (docs/benchmarks.md, issue
44: 100% of the files they were tuned on, 57% of the overrides of a set written apart). This model reads the same
memory as a bag of features and weighs them with weights fitted on the development sets by
`python bench/poisoning_train.py`, which writes `screen_weights.py` (the one declaration of the weights, the bias
and the threshold; generated, never edited by hand) and prints the out-of-fold figures the threshold was chosen
on. The screen holds a memory this model puts at `THRESHOLD` or above; an instruction the patterns find is kept
only where the model puts the memory at `VETO` or above (screen.py's `_weighed` says which findings).

    p = 1 / (1 + exp(-(BIAS + Σ WEIGHTS[feature] for each feature present)))

Features are read from the text as the patterns read it (`fold`ed, look-alike letters as Latin, hidden characters
dropped), each counted once: `w:word`, `b:word word` (two in a row), `p:openi` (the first five letters of a word
of six or more: "ejecuta", "ejecútalo" and "ejecutar" share one), `k:음절` (two Hangul syllables in a row inside a
word: Korean glues particles and endings to its stems), the same word with leetspeak read (`1gn0r4` →
`ignora`), and a word split by hyphens read whole (`dis-re-gard` → `w:disregard`). Pure and deterministic: no
I/O, no randomness.
"""

from __future__ import annotations

import math
import re

from .screen_weights import BIAS, THRESHOLD, VETO, WEIGHTS
from .text import fold, skeleton, words
from .visible import strip_invisible

_LEET = str.maketrans("013457@$", "oieastas")
_PREFIX = 5  # the letters of a long word's opening feature
# a match starts only where a word starts, and no run of letters is given back: linear on a 64 KB run of letters
# (without both, every position of a long word retried the whole rest of it: a body at its size limit hung a call)
_HYPHENATED = re.compile(r"(?<![^\W\d_])[^\W\d_]++(?:-[^\W\d_]++)+")


def view(text: str) -> str:
    """The text as the model reads it (and as the patterns do): hidden characters dropped, then `reading`."""
    return reading(strip_invisible(text))


def reading(plain: str) -> str:
    """A text without hidden characters as the model and the patterns read it (screen.py reads through this too):
    folded, look-alike letters as Latin, code marks and emphasis as spaces."""
    folded = fold(skeleton(plain))
    return folded.replace("`", " ").replace("*", "").replace("_", " ").replace("\u2019", "'")


def features(text: str) -> set[str]:
    """Every feature of the text, once each (see the module's docstring). Each distinct word and pair is spelled
    once: a 2 KB memory repeats most of its words."""
    read = view(text)
    tokens = [w if w.isalpha() else _read_word(w) for w in words(read)]
    out: set[str] = set()
    if "-" in read:  # a word split by hyphens ("dis-re-gard") is also read whole
        out.update("w:" + m.group().replace("-", "") for m in _HYPHENATED.finditer(read))
    for word in set(tokens):
        if not word:
            continue
        out.add("w:" + word)
        if word.isascii():
            if len(word) > _PREFIX:
                out.add("p:" + word[:_PREFIX])
        elif any("\uac00" <= c <= "\ud7a3" for c in word):
            out.update("k:" + word[i : i + 2] for i in range(len(word) - 1))
    out.update(f"b:{a} {b}" for a, b in set(zip(tokens, tokens[1:], strict=False)) if a and b)
    return out


def _read_word(word: str) -> str:
    """The word as a feature: a number is none (it also breaks a pair), leetspeak is read ("1gn0r4" → "ignora")."""
    if word.isdigit():
        return ""
    if word.isascii() and not word.isalpha() and any(c.isdigit() for c in word):
        return word.translate(_LEET)
    return word


def score(feats: set[str], weights: dict[str, float], bias: float) -> float:
    """The probability the weights give to a set of features (the trainer scores its folds with this too)."""
    z = bias + sum(weights[f] for f in feats & weights.keys())
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def probability(text: str) -> float:
    """How much the text reads like an order to the agent, by the shipped weights."""
    return score(features(text), WEIGHTS, BIAS)


__all__ = ["THRESHOLD", "VETO", "features", "probability", "reading", "score", "view"]
