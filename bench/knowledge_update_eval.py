"""Knowledge-update questions: does recall put the current belief first? Prints hit@1 per language.

The labelled set (`bench/knowledge_update_cases.jsonl`, hand-written for this project in English, Korean and
Spanish) holds supersede chains (a belief and the memories that replaced it, oldest first), memories that
are not superseded, and for each chain questions asked in an older member's words ("which jenkins server
runs our builds" when the builds moved to Buildkite since). The expected first result is the chain's head,
its newest memory.

Every memory goes into one fresh temporary store through the real `MemoryService.remember`, each newer
version with `supersedes=[the previous one]` (which archives it, as an agent or the CLI would), and every
question through `MemoryService.recall(question, limit=10, touch=False)`.

    python bench/knowledge_update_eval.py            # hit@1, MRR of the head, stale-first share, per language
    python bench/knowledge_update_eval.py --show     # also each question whose first result is not the head
    python bench/knowledge_update_eval.py --json out.json

Figures per language: hit@1 (the head is the first result), MRR of the head (0 when not in the top 10), and
stale@1 (an older member of the same chain is the first result).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_mcp.tools.service import MemoryService  # noqa: E402

CASES = Path(__file__).resolve().parent / "knowledge_update_cases.jsonl"
LIMIT = 10


@dataclass
class Question:
    text: str
    lang: str
    chain: str
    head: str  # id of the chain's newest memory
    older: frozenset[str]  # ids of the members it superseded


def build(svc: MemoryService, cases: list[dict]) -> list[Question]:
    questions: list[Question] = []
    for case in cases:
        if case["kind"] == "memory":
            svc.remember(case["title"], case["body"], case["type"], "user-stated", case["entities"])
            continue
        ids: list[str] = []
        for v in case["versions"]:
            made = svc.remember(
                v["title"], v["body"], v["type"], "user-stated", v["entities"], supersedes=ids[-1:] or None
            )
            ids.append(made.id)
        questions += [Question(q, case["lang"], case["chain"], ids[-1], frozenset(ids[:-1])) for q in case["questions"]]
    return questions


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=Path, default=CASES)
    ap.add_argument("--show", action="store_true", help="print each question whose first result is not the head")
    ap.add_argument("--json", type=Path, help="write the figures as JSON here")
    args = ap.parse_args()
    cases = [json.loads(line) for line in args.cases.read_text(encoding="utf-8").splitlines() if line.strip()]
    tally: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])  # n, hit@1, rr, stale@1
    with tempfile.TemporaryDirectory(prefix="ku-eval-") as tmp:
        svc = MemoryService(Path(tmp) / "store")
        try:
            questions = build(svc, cases)
            for q in questions:
                results = svc.recall(q.text, limit=LIMIT, touch=False).results
                got = [r.id for r in results]
                rank = got.index(q.head) + 1 if q.head in got else 0
                for key in (q.lang, "all"):
                    t = tally[key]
                    t[0] += 1
                    t[1] += rank == 1
                    t[2] += 1 / rank if rank else 0.0
                    t[3] += bool(got) and got[0] in q.older
                if args.show and rank != 1:
                    first = results[0].title if results else "(nothing)"
                    print(f"  [{q.lang}] {q.text!r}: head at {rank or '-'}; first: {first}")
        finally:
            svc.close()
    figures = {
        lang: {"n": int(t[0]), "hit@1": t[1] / t[0], "mrr": t[2] / t[0], "stale@1": t[3] / t[0]}
        for lang, t in sorted(tally.items(), key=lambda kv: (kv[0] == "all", kv[0]))
    }
    print(f"{'language':<10}{'n':>5}{'hit@1':>9}{'MRR':>9}{'stale@1':>9}")
    for lang, f in figures.items():
        print(f"{lang:<10}{f['n']:>5}{f['hit@1']:>9.4f}{f['mrr']:>9.4f}{f['stale@1']:>9.4f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
