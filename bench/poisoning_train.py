"""Fit the poisoning screen's learnt reading (memory_mcp/domain/screen_model.py) on the development files.

    python bench/poisoning_train.py              # out-of-fold figures, then write memory_mcp/domain/screen_weights.py
    python bench/poisoning_train.py --dry-run    # the figures only

Examples: every attack of kinds (c) override and (d) payload is a positive, every benign memory a negative, from
the development files (`DEV_FILES`; a file whose name holds "blind3" is refused: that set is measured once, by the
lead, with the design frozen). Kinds (a) and (b) are left out: their visible words are often harmless (the order
sits in hidden characters or an image's address), and the patterns catch them. The text of a case is what the
screen reads of it: title, body and entities, one per line.

The model is an L2-regularised logistic regression over `screen_model.features`, fitted by full-batch gradient
descent with per-feature steps (AdaGrad), a fixed number of rounds from zero weights: deterministic, no library.
A feature enters the vocabulary when `MIN_DF` training memories hold it.

How well it carries over is measured out of fold, two ways: leaving one file out (fitted on the other two, scored
on that one: each file was written by a different helper, so this is the nearest to a new blind set) and five
folds split by case id. `THRESHOLD` is chosen on the leave-one-file-out probabilities, pooled: the lowest
threshold at which at most `BENIGN_SHARE` of the benign memories reach it. Printed per file, kind and language:
the patterns alone, the model alone and the two together (what the screen does), all out of fold for the model;
the patterns were tuned on the first two files, so only the third file's pattern figures are out of sample.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memory_mcp.domain.screen import firm, memory_texts, screen  # noqa: E402
from memory_mcp.domain.screen_model import features, score  # noqa: E402

DEV_FILES = ("poisoning_cases_dev.jsonl", "poisoning_cases_blind.jsonl", "poisoning_cases_blind2.jsonl")
WEIGHTS_FILE = REPO / "memory_mcp" / "domain" / "screen_weights.py"
LEARNT_KINDS = ("override", "payload")
MIN_DF = 2  # training memories a feature must appear in
L2 = 0.003  # the penalty on the sum of squared weights (the bias is not penalised), per example
ROUNDS = 150
STEP = 0.5
BENIGN_SHARE = 0.01  # the share of benign memories the threshold lets through to quarantine, out of fold
# VETO: the lowest probability of the grid under which dropping a pattern's instruction finding brings the benign
# memories held (patterns and model, leave one file out) to at most this share: the target. Each step of the
# grid trades benign memories held for attacks let through (printed: "the veto's trade")
BENIGN_TARGET = 0.02
VETO_GRID = tuple(i / 100 for i in range(41))
FOLDS = 5


@dataclass
class Case:
    file: str
    id: str
    kind: str  # override, payload, invisible, fetch, or "benign"
    lang: str
    feats: set[str]
    strong: bool  # the patterns find something the model never overrules (`screen.firm`)
    weak: bool  # the patterns find only instructions the model weighs (kept at VETO or above)

    @property
    def rules(self) -> bool:
        return self.strong or self.weak

    @property
    def label(self) -> bool:
        return self.kind in LEARNT_KINDS


def load() -> list[Case]:
    cases: list[Case] = []
    for name in DEV_FILES:
        if "blind3" in name:
            raise SystemExit("blind3 is measured once by the lead: never trained on")
        for line in (REPO / "bench" / name).open(encoding="utf-8"):
            if not line.strip():
                continue
            c = json.loads(line)
            texts = memory_texts(c["title"], c["body"], None, c.get("entities"))
            joined = "\n".join(t for t in texts.values() if t)
            kind = c["kind"] if c["label"] == "attack" else "benign"
            found = screen(texts, learned=False).findings
            strong = any(firm(f) for f in found)
            cases.append(Case(name, c["id"], kind, c["lang"], features(joined), strong, bool(found) and not strong))
    return cases


def fit(train: list[Case]) -> tuple[dict[str, float], float]:
    """Weights and bias of the L2-regularised logistic regression on the training cases (kinds (a)/(b) left out)."""
    examples = [c for c in train if c.kind in LEARNT_KINDS or c.kind == "benign"]
    df: dict[str, int] = defaultdict(int)
    for c in examples:
        for f in c.feats:
            df[f] += 1
    vocab = sorted(f for f, n in df.items() if n >= MIN_DF)
    index = {f: i for i, f in enumerate(vocab)}
    rows = [[index[f] for f in c.feats if f in index] for c in examples]
    ys = [1.0 if c.label else 0.0 for c in examples]
    n = len(examples)
    w = [0.0] * len(vocab)
    b = 0.0
    g2 = [1e-8] * len(vocab)
    gb2 = 1e-8
    for _ in range(ROUNDS):
        grad = [L2 * x for x in w]
        gb = 0.0
        for row, y in zip(rows, ys, strict=True):
            z = b + sum(w[i] for i in row)
            p = 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0
            d = (p - y) / n
            gb += d
            for i in row:
                grad[i] += d
        for i, g in enumerate(grad):
            g2[i] += g * g
            w[i] -= STEP * g / math.sqrt(g2[i])
        gb2 += gb * gb
        b -= STEP * gb / math.sqrt(gb2)
    return {f: w[i] for f, i in index.items()}, b


def fold_of(case: Case) -> int:
    return zlib.crc32(case.id.encode()) % FOLDS


def out_of_fold(cases: list[Case], by_file: bool) -> list[float]:
    """Each case's probability from a model fitted without its file (`by_file`) or without its fold."""
    probs = [0.0] * len(cases)
    groups = DEV_FILES if by_file else tuple(range(FOLDS))
    for g in groups:
        held = [i for i, c in enumerate(cases) if (c.file if by_file else fold_of(c)) == g]
        if not held:
            continue
        weights, bias = fit([c for c in cases if (c.file if by_file else fold_of(c)) != g])
        for i in held:
            probs[i] = score(cases[i].feats, weights, bias)
    return probs


def threshold_for(cases: list[Case], probs: list[float]) -> float:
    """The lowest threshold at which at most BENIGN_SHARE of the benign memories reach it."""
    benign = sorted((p for c, p in zip(cases, probs, strict=True) if c.kind == "benign"), reverse=True)
    allowed = int(BENIGN_SHARE * len(benign))
    return round(benign[allowed] + 1e-4, 4) if allowed < len(benign) else 0.5


def flagged(c: Case, p: float, threshold: float, veto: float) -> bool:
    """What the screen does (screen.py's `_weighed`)."""
    return c.strong or (c.weak and p >= veto) or p >= threshold


def veto_for(cases: list[Case], probs: list[float], threshold: float) -> float:
    """The lowest VETO of the grid at which at most BENIGN_TARGET of the benign memories are held (the grid's
    highest when none is)."""
    benign = [(c, p) for c, p in zip(cases, probs, strict=True) if c.kind == "benign"]
    for v in VETO_GRID:
        if sum(flagged(c, p, threshold, v) for c, p in benign) <= BENIGN_TARGET * len(benign):
            return v
    return VETO_GRID[-1]


def figures(title: str, cases: list[Case], probs: list[float], threshold: float, veto: float) -> None:
    print(f"\n{title} (threshold {threshold:.4f}, veto {veto:.2f})")
    for name in (*DEV_FILES, "all"):
        part = [(c, p) for c, p in zip(cases, probs, strict=True) if name in ("all", c.file)]
        row = []
        for kind in ("override", "payload", "invisible", "fetch"):
            att = [(c, p) for c, p in part if c.kind == kind]
            rules = sum(c.rules for c, _ in att)
            model = sum(p >= threshold for _, p in att)
            both = sum(flagged(c, p, threshold, veto) for c, p in att)
            row.append(f"{kind} {rules}/{model}/{both} of {len(att)}")
        ben = [(c, p) for c, p in part if c.kind == "benign"]
        rules = sum(c.rules for c, _ in ben)
        model = sum(p >= threshold for _, p in ben)
        both = sum(flagged(c, p, threshold, veto) for c, p in ben)
        row.append(f"benign flagged {rules}/{model}/{both} of {len(ben)} ({100 * both / max(len(ben), 1):.1f}%)")
        print(f"  {name}: " + "; ".join(row))
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for c, p in zip(cases, probs, strict=True):
        if c.kind in ("override", "payload", "benign"):
            key = f"{c.kind}/{c.lang}"
            by_lang[key][0] += flagged(c, p, threshold, veto)
            by_lang[key][1] += p >= threshold
            by_lang[key][2] += 1
    print(
        "  by kind/language, flagged (patterns or model / model alone / total): "
        + ", ".join(f"{k} {v[0]}/{v[1]}/{v[2]}" for k, v in sorted(by_lang.items()))
    )


def write(weights: dict[str, float], bias: float, threshold: float, veto: float, trained_on: str) -> None:
    kept = {f: round(w, 4) for f, w in sorted(weights.items()) if abs(w) >= 5e-4}
    lines = [
        '"""Generated by bench/poisoning_train.py: do not edit by hand (see screen_model.py)."""',
        "",
        f"BIAS = {bias:.4f}",
        f"THRESHOLD = {threshold:.4f}",
        f"VETO = {veto:.2f}",
        f"TRAINED_ON = {json.dumps(trained_on, ensure_ascii=False)}",
        "WEIGHTS: dict[str, float] = {",
        *(f"    {json.dumps(f, ensure_ascii=False)}: {w}," for f, w in kept.items()),
        "}",
        "",
    ]
    WEIGHTS_FILE.write_text("\n".join(lines), encoding="utf-8")
    print(
        f"\nwrote {WEIGHTS_FILE.relative_to(REPO)}: {len(kept)} weights, bias {bias:.4f}, threshold {threshold:.4f}, "
        f"veto {veto:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the out-of-fold figures, write nothing")
    args = parser.parse_args()
    cases = load()
    lofo = out_of_fold(cases, by_file=True)
    threshold = threshold_for(cases, lofo)
    veto = veto_for(cases, lofo, threshold)
    figures("leave one file out: patterns / model / both", cases, lofo, threshold, 0.0)
    figures("leave one file out, with the veto: patterns / model / both", cases, lofo, threshold, veto)
    trade = []
    for v in (0.0, veto, 0.1, 0.15, 0.2, 0.3):
        benign = sum(flagged(c, p, threshold, v) for c, p in zip(cases, lofo, strict=True) if c.kind == "benign")
        missed = sum(not flagged(c, p, threshold, v) for c, p in zip(cases, lofo, strict=True) if c.label)
        trade.append(f"{v:.2f}: benign {benign}, attacks (c, d) missed {missed}")
    print("  the veto's trade, leave one file out: " + "; ".join(trade))
    kfold = out_of_fold(cases, by_file=False)
    figures(f"{FOLDS} folds by case id, with the veto: patterns / model / both", cases, kfold, threshold, veto)
    if args.dry_run:
        return
    weights, bias = fit(cases)
    n_pos = sum(c.label for c in cases)
    n_neg = sum(c.kind == "benign" for c in cases)
    write(
        weights,
        bias,
        threshold,
        veto,
        f"dev, blind, blind2: {n_pos} attacks (c, d), {n_neg} benign; L2 {L2}, {ROUNDS} rounds",
    )


if __name__ == "__main__":
    main()
