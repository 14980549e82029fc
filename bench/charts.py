"""Draw the benchmark charts in docs/charts/ from docs/charts/figures.json.

    pip install -e ".[bench]"        # matplotlib, an optional extra (never a core dependency)
    python bench/charts.py           # rewrites docs/charts/*.png

Every figure drawn comes from the one data file, which cites the section of docs/benchmarks.md it was
copied from; this script measures nothing. A figure that is null (not measured yet, such as the conflict
gate's "after") is left out of its chart, and a series with no figure at all is skipped and named on
stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FIGURES = ROOT / "docs" / "charts" / "figures.json"

# One colour per system in every chart (matched on the start of its name): memory-mcp in the accent colour.
OURS = "#3b5bdb"
SYSTEM_COLOURS = (
    ("memory-mcp", OURS),
    ("memsearch", "#e8590c"),
    ("mempalace", "#2b8a3e"),
    ("MemPalace hybrid", "#2b8a3e"),
    ("MemPalace raw", "#8ce99a"),
    ("basic-memory", "#862e9c"),
    ("FTS5", "#868e96"),
    ("random", "#ced4da"),
)
# PNGs without a timestamp or version, so regenerating unchanged figures rewrites identical bytes.
PNG_METADATA = {"Software": None}


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        sys.exit('bench/charts.py needs matplotlib: pip install -e ".[bench]"')
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "font.size": 10,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "axes.grid.axis": "y",
            "grid.color": "#e3e6eb",
            "axes.axisbelow": True,
        }
    )
    return plt


def _colours(names: list[str]) -> list[str]:
    return [next((c for prefix, c in SYSTEM_COLOURS if name.startswith(prefix)), "#495057") for name in names]


def _save(plt: Any, fig: Any, out: Path, name: str) -> Path:
    path = out / name
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata=PNG_METADATA)
    plt.close(fig)
    return path


def _grouped_bars(
    ax: Any, groups: list[str], systems: list[dict[str, Any]], key: str = "values", label_fmt: str = "%.2f"
) -> None:
    """One cluster per group, one bar per system; a null figure leaves its slot empty."""
    width = 0.8 / len(systems)
    for i, (system, colour) in enumerate(zip(systems, _colours([s["name"] for s in systems]), strict=True)):
        xs = [g + (i - (len(systems) - 1) / 2) * width for g in range(len(groups))]
        pairs = [(x, v) for x, v in zip(xs, system[key], strict=True) if v is not None]
        if not pairs:
            continue
        bars = ax.bar([x for x, _ in pairs], [v for _, v in pairs], width, label=system["name"], color=colour)
        if system["name"].startswith("memory-mcp"):
            ax.bar_label(bars, fmt=label_fmt, fontsize=7, padding=1.5, color=OURS)
    ax.set_xticks(range(len(groups)), groups)


def peers(plt: Any, figures: dict[str, Any], out: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    for ax, key, title in (
        (axes[0], "peers_locomo", "LoCoMo: 1,982 questions, English conversations"),
        (axes[1], "peers_korquad", "KorQuAD 1.0 dev: 5,774 Korean questions (memsearch: every other one)"),
    ):
        block = figures[key]
        _grouped_bars(ax, block["metrics"], block["systems"])
        ax.set_title(title, fontsize=10.5)
        ax.set_ylim(0, 1.08)
    handles, labels = axes[0].get_legend_handles_labels()
    labels = [label.replace(" (2,887 q.)", "") for label in labels]
    fig.legend(handles, labels, loc="lower center", ncols=len(labels), frameon=False, fontsize=8.5)
    fig.subplots_adjust(bottom=0.17)
    axes[0].set_ylabel("score (higher is better)")
    fig.suptitle("Retrieval beside peers: same stores, questions and scorer (docs/benchmarks.md)", fontsize=11)
    return _save(plt, fig, out, "peers.png")


def mempalace_protocol(plt: Any, figures: dict[str, Any], out: Path) -> Path:
    block = figures["mempalace_protocol"]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    _grouped_bars(ax, [f"{g} granularity" for g in block["granularities"]], block["systems"])
    for container in ax.containers:
        if container.get_label() and not container.get_label().startswith("memory-mcp"):
            ax.bar_label(container, fmt="%.2f", fontsize=7.5, padding=1.5, color="#495057")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("R@10, share of evidence in the top 10")
    ax.set_title("LoCoMo on MemPalace's own protocol, all 1,986 questions", fontsize=10.5)
    ax.legend(fontsize=8, frameon=False, loc="upper right")
    return _save(plt, fig, out, "mempalace_protocol.png")


def peer_recall_cpu(plt: Any, figures: dict[str, Any], out: Path) -> Path:
    block = figures["peer_recall_cpu_ms"]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    _grouped_bars(ax, block["datasets"], block["systems"], key="p50", label_fmt="%g")
    for container in ax.containers:
        if container.get_label() and not container.get_label().startswith("memory-mcp"):
            ax.bar_label(container, fmt="%g", fontsize=8, label_type="center", color="white")
    width = 0.8 / len(block["systems"])
    for i, system in enumerate(block["systems"]):
        xs = [g + (i - (len(block["systems"]) - 1) / 2) * width for g in range(len(block["datasets"]))]
        ax.scatter(xs, system["p95"], marker="_", s=220, color="#1d2330", zorder=3, label="p95" if i == 0 else None)
    ax.set_yscale("log")
    ax.set_ylim(5, 3000)
    ax.set_ylabel("CPU ms per recall (bar: p50, dash: p95; log scale)")
    ax.set_title("Recall cost beside the embedding peers (lower is better)", fontsize=10.5)
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    return _save(plt, fig, out, "peer_recall_cpu.png")


def recall_latency(plt: Any, figures: dict[str, Any], out: Path) -> Path:
    block = figures["recall_latency_by_store_size"]
    sizes = block["sizes"]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    colours = ["#adb5bd", "#e8590c", OURS]
    for series, colour in zip(block["series"], colours, strict=True):
        for key, style in (("p95_ms", "-"), ("p50_ms", ":")):
            points = [(s, v) for s, v in zip(sizes, series[key], strict=True) if v is not None]
            if not points:
                continue
            label = f"{series['name']}, {key.split('_')[0]}"
            ax.plot([s for s, _ in points], [v for _, v in points], style, marker="o", color=colour, label=label)
            if key == "p95_ms" and series is block["series"][-1]:
                for s, v in points:
                    ax.annotate(f"{v:g}", (s, v), textcoords="offset points", xytext=(6, 2), fontsize=7.5, color=colour)
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{s // 1000}k" for s in sizes])
    ax.set_xlabel("memories in the store (synthetic, bench/speed.py)")
    ax.set_ylabel("recall latency, ms")
    ax.set_title("Recall latency against store size (2-core machine)", fontsize=10.5)
    ax.legend(fontsize=7.5, frameon=False, loc="upper left")
    return _save(plt, fig, out, "recall_latency.png")


def conflict_gate(plt: Any, figures: dict[str, Any], out: Path) -> Path:
    block = figures["conflict_gate"]
    known = [s for s in block["series"] if any(v is not None for v in s["precision"] + s["recall"])]
    for series in block["series"]:
        if series not in known:
            print(f"conflict_gate: '{series['name']}' has no figures yet; left out")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    # the first series (before) grey, the last (current) ours, the designs between in blues, lighter the older
    between = ["#cfdcf7", "#9dbaf0", "#6f96e2"][: max(len(known) - 2, 0)]
    palette = ["#adb5bd", *between, OURS][: len(known)]
    for ax, key in ((axes[0], "precision"), (axes[1], "recall")):
        width = 0.8 / max(len(known), 1)
        for i, series in enumerate(known):
            xs = [g + (i - (len(known) - 1) / 2) * width for g in range(len(block["sets"]))]
            pairs = [(x, v) for x, v in zip(xs, series[key], strict=True) if v is not None]
            bars = ax.bar([x for x, _ in pairs], [v for _, v in pairs], width, label=series["name"], color=palette[i])
            # with more than three series the labels stand upright, or neighbours' labels run together
            ax.bar_label(bars, fmt="%.2f", fontsize=7 if len(known) > 3 else 8, padding=1.5,
                         rotation=90 if len(known) > 3 else 0)  # fmt: skip
        ax.set_xticks(range(len(block["sets"])), block["sets"], fontsize=8.5)
        ax.set_title(key, fontsize=10.5)
        ax.set_ylim(0, 1.18)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncols=min(len(labels), 2), frameon=False, fontsize=8.5)
    fig.subplots_adjust(bottom=0.22)
    missing = [s["name"] for s in block["series"] if s not in known]
    if missing:
        fig.text(0.99, -0.02, "not measured yet: " + ", ".join(missing), ha="right", fontsize=8, color="#6b7280")
    fig.suptitle("Conflict gate on our labelled cases (bench/conflicts_eval.py)", fontsize=11)
    return _save(plt, fig, out, "conflict_gate.png")


CHARTS = (peers, mempalace_protocol, peer_recall_cpu, recall_latency, conflict_gate)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=Path, default=DEFAULT_FIGURES, help="the data file (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="where the PNGs go (default: the data file's folder)")
    args = parser.parse_args(argv)
    figures = json.loads(args.figures.read_text(encoding="utf-8"))
    out = args.out or args.figures.parent
    out.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    for chart in CHARTS:
        path = chart(plt, figures, out)
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
