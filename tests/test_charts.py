"""docs/charts/figures.json holds only figures docs/benchmarks.md reports, and bench/charts.py draws from it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIGURES = REPO / "docs" / "charts" / "figures.json"
CHARTS = ("peers.png", "mempalace_protocol.png", "peer_recall_cpu.png", "recall_latency.png", "conflict_gate.png")


def _numbers(node: object) -> Iterator[float]:
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return
    if isinstance(node, int | float):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _numbers(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key != "sizes":  # store sizes are axis positions, not measurements
                yield from _numbers(value)


def _spellings(value: float) -> set[str]:
    """The ways docs/benchmarks.md writes a figure: 0.3725, 0.97, 1.00, 12.7, 145, 1,266."""
    spellings = {repr(value), f"{value:.2f}", f"{value:.1f}", f"{value:,}"}
    if float(value).is_integer():
        spellings |= {f"{int(value)}", f"{int(value):,}"}
    return spellings


def test_every_figure_is_one_benchmarks_md_reports() -> None:
    text = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))
    for name, block in figures.items():
        if name.startswith("_"):
            continue
        assert "docs/benchmarks.md" in block["source"], name
        missing = [v for v in _numbers(block) if not any(s in text for s in _spellings(v))]
        assert missing == [], f"{name}: figures not found in docs/benchmarks.md: {missing}"


def _run_charts(figures: dict, out: Path) -> subprocess.CompletedProcess:
    data = out / "figures.json"
    data.write_text(json.dumps(figures), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(REPO / "bench" / "charts.py"), "--figures", str(data)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_charts_skip_a_series_until_it_is_filled_in(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")  # the optional [bench] extra
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))
    sets = len(figures["conflict_gate"]["sets"])
    figures["conflict_gate"]["series"].append(
        {"name": "next design", "precision": [None] * sets, "recall": [None] * sets}
    )
    before = _run_charts(figures, tmp_path)
    assert before.returncode == 0, before.stderr
    assert "'next design' has no figures yet; left out" in before.stdout
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(CHARTS)
    first = (tmp_path / "conflict_gate.png").read_bytes()

    filled = copy.deepcopy(figures)
    after = next(s for s in filled["conflict_gate"]["series"] if s["name"] == "next design")
    after["precision"], after["recall"] = [0.9] * sets, [0.8] * sets
    again = _run_charts(filled, tmp_path)
    assert again.returncode == 0, again.stderr
    assert "has no figures yet" not in again.stdout
    assert (tmp_path / "conflict_gate.png").read_bytes() != first
