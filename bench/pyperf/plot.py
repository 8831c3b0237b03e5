"""Bar chart of the slowdowns in a run.py JSON file.

    python bench/pyperf/plot.py results.json [-o docs/pyperf.png]

One group of bars per benchmark: the work ratio (recorded over plain, medians) of squall full
and calls, and of the peers the run measured, on a log scale, with issue 11's target lines: full mode's
2.5x (geometric mean) and 4x (any benchmark), calls mode's 1.5x; the title gives the geometric
means.
A run that timed out but whose work ended, or whose recording stopped at the memory limit, is
drawn hatched at its work ratio; one whose work did not end is marked with a cross at the top;
a failed run is left out (the table says why).
"""

from __future__ import annotations

import argparse
import json
import os

import matplotlib.pyplot as plt
from matplotlib import ticker

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "pyperf.png")
KINDS = ("done", "late", "lost", "failed")
CALLS_TARGET = 1.5  # calls mode's geometric mean target (issue 11), drawn beside run.py's
COLOURS = {
    "full": "#c0392b",
    "calls": "#e67e22",
    "cprofile": "#7f8c8d",
    "viztracer": "#2980b9",
    "pyttd": "#8e44ad",
}


def kind(status: str, work_ratio: float | None) -> str:
    """How a cell is drawn: "done", "late" (timed out after its work, or recorded only until the
    memory limit: a lower bound), "lost" (timed out in its work) or "failed" (failed, or its
    result differed from plain's)."""
    if status == "ok":
        return "done"
    if status.startswith(("timeout", "memory limit")):
        return "late" if work_ratio is not None else "lost"
    return "failed"


def bars(data: dict) -> dict:
    """{variant key: [(benchmark index, work ratio or None, kind)]} for the drawn variants."""
    names = list(data["results"])
    out = {}
    for key, v in data["variants"].items():
        if v["baseline"] is None or v["missing"] or key not in COLOURS:
            continue
        out[key] = []
        for i, name in enumerate(names):
            cells = data["results"][name]
            cell, base = cells.get(key), cells.get(v["baseline"])
            if cell and base and base["status"] == "ok":
                w = cell["work_s"] / base["work_s"] if cell["work_s"] is not None else None
                out[key].append((i, w, kind(cell["status"], w)))
    return out


def draw_variant(
    ax, points: list, offset: float, width: float, top: float, label: str, colour: str
) -> None:
    """One variant's bars: solid when it finished, hatched when it timed out after its work,
    a cross at the top when it timed out in its work, "failed" at the bottom when it failed."""
    at = {k: [(i + offset, w) for i, w, kd in points if kd == k] for k in KINDS}
    if at["done"]:
        ax.bar(*zip(*at["done"]), width, label=label, color=colour)
    if at["late"]:
        ax.bar(
            *zip(*at["late"]),
            width,
            color="white",
            edgecolor=colour,
            hatch="///",
            label=f"{label}: timed out after its work",
        )
    if at["lost"]:
        ax.scatter(
            [x for x, _ in at["lost"]],
            [top / 1.3] * len(at["lost"]),
            marker="x",
            color=colour,
            label=f"{label}: timed out in its work",
        )
    for x, _ in at["failed"]:
        ax.text(x, 0.55, "failed", rotation=90, ha="center", va="bottom", fontsize=8, color=colour)


def plot(data: dict, out: str) -> None:
    names = list(data["results"])
    groups = bars(data)
    targets = data["meta"]["targets"]
    top = max([w for g in groups.values() for _, w, _ in g if w] + targets) * 1.6
    width = 0.8 / max(1, len(groups))
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * len(names) + 2), 7))
    for k, (key, points) in enumerate(groups.items()):
        offset = (k - (len(groups) - 1) / 2) * width
        draw_variant(ax, points, offset, width, top, data["variants"][key]["label"], COLOURS[key])
    for t, style in zip(targets, ("--", "-")):
        ax.axhline(t, color="black", linestyle=style, linewidth=0.9)
        ax.text(len(names) - 0.4, t, f" {t:g}x", va="center", fontsize=9)
    if "calls" in groups:
        ax.axhline(CALLS_TARGET, color=COLOURS["calls"], linestyle=":", linewidth=1.2)
        ax.text(
            len(names) - 0.4,
            CALLS_TARGET,
            f" {CALLS_TARGET:g}x calls",
            va="center",
            fontsize=9,
            color=COLOURS["calls"],
        )
    ax.set_yscale("log")
    ax.set_ylim(0.5, top)
    ticks = [2**k for k in range(-1, 12) if 2**k < top]
    ax.set_yticks(ticks, [f"{t:g}x" for t in ticks])
    ax.yaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_ylabel("work time recorded / plain (log scale)")
    m = data["meta"]
    means = ", ".join(
        f"{data['variants'][k]['label']} {t['geomean_work']:.2f}x"
        for k, t in data.get("summary", {}).items()
        if k in groups and t.get("geomean_work")
    )
    ax.set_title(
        f"pyperformance benchmarks: slowdown of the work, recorded over plain\n"
        f"commit {m['commit']}, Python {m['python']}, median of {m['repeat']}, "
        f"timeout {m['timeout_s']:g} s; geometric means: {means or '-'}",
        fontsize=10,
    )
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.3))
    ax.grid(axis="y", alpha=0.25)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="a file written by run.py --json")
    ap.add_argument("-o", "--output", default=DEFAULT_OUT, help="PNG to write (docs/pyperf.png)")
    args = ap.parse_args()
    with open(args.json, encoding="utf-8") as f:
        plot(json.load(f), args.output)
    print(args.output)


if __name__ == "__main__":
    main()
