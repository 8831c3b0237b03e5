"""Plot of a bench/peers.py JSON file: each tool's slowdown and peak RSS per workload.

    python bench/peers_plot.py peers.json [more.json ...] [-o docs/peers.png]

Two panels, one group of bars per workload, one bar per tool that ran: the work ratio against
plain Python on the same interpreter (log scale), and the peak RSS in MB (log scale). A run that
was killed at the timeout is drawn hatched up to the lower bound it proves (the seconds it ran
over plain's work), with "≥" above it; its RSS bar is its peak until the kill. With several
files, a workload measured in a later file is drawn from it (a rerun of some workloads).
"""

from __future__ import annotations

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "docs", "peers.png")
COLOURS = {
    "full": "#c0392b",
    "calls": "#e67e22",
    "cprofile": "#7f8c8d",
    "viztracer": "#2980b9",
    "hunter": "#16a085",
    "pysnooper": "#27ae60",
    "snoop": "#8bc34a",
    "birdseye": "#f1c40f",
    "pyttd": "#8e44ad",
}


def cell_values(cell: dict, base: dict) -> tuple[float | None, bool, float | None]:
    """(work ratio or its lower bound, whether it is a lower bound, peak RSS MB)."""
    if base is None or base["status"] != "ok" or cell is None:
        return None, False, None
    rss = cell["rss_mb"] if cell["rss_mb"] is not None else max((r["rss_mb"] for r in cell["runs"]), default=None)
    if cell["status"] == "ok":
        return cell["work_s"] / base["work_s"], False, rss
    if cell["status"].startswith("timeout"):
        if cell["work_s"] is not None:  # work ended, the save did not
            return cell["work_s"] / base["work_s"], False, rss
        return min(r["proc_s"] for r in cell["runs"]) / base["work_s"], True, rss
    return None, False, None


def plot(data: dict, out: str) -> None:
    names = list(data["results"])
    tools = [k for k, v in data["variants"].items() if v["baseline"] and not v["missing"] and k in COLOURS]
    fig, (ax_t, ax_m) = plt.subplots(2, 1, figsize=(max(10, 1.6 * len(names) + 3), 10), sharex=True)
    width = 0.85 / len(tools)
    for j, key in enumerate(tools):
        v = data["variants"][key]
        offset = (j - (len(tools) - 1) / 2) * width
        for i, name in enumerate(names):
            cells = data["results"][name]
            ratio, bound, rss = cell_values(cells.get(key), cells.get(v["baseline"]))
            x = i + offset
            label = v["label"] if i == 0 else None
            if ratio is not None:
                style = dict(color="white", edgecolor=COLOURS[key], hatch="///") if bound else dict(color=COLOURS[key])
                ax_t.bar(x, ratio, width, label=label, **style)
                if bound:
                    ax_t.text(x, ratio * 1.05, "≥", ha="center", va="bottom", fontsize=8)
            if rss is not None:
                ax_m.bar(x, rss, width, color=COLOURS[key], label=None)
        label = None
    for i, name in enumerate(names):
        plain = data["results"][name].get("plain")
        if plain and plain["rss_mb"]:
            ax_m.hlines(
                plain["rss_mb"], i - 0.45, i + 0.45, colors="black", linewidth=1, label="plain" if i == 0 else None
            )
    m = data["meta"]
    ax_t.set_title(
        "squall and the tools a user would pick instead, same workloads, tools side by side\n"
        f"commit {m['commit']}, Python {m['python']}, median of {m['repeat']}, timeout "
        f"{m.get('tracer_timeout_s', m['timeout_s']):g} s for the tracers (hatched: killed, a lower bound)"
        + "".join(f"\nrerun later: {', '.join(r)}" for r in m.get("reruns", []))
    )
    for ax, ylabel in ((ax_t, "work time / plain (log)"), (ax_m, "peak RSS, MB (log)")):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    ax_t.axhline(1, color="black", linewidth=0.8)
    ax_m.set_xticks(range(len(names)))
    ax_m.set_xticklabels(names, rotation=30, ha="right")
    ax_t.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax_m.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


def merged(files: list[str]) -> dict:
    """The first file's data, with each later file's workloads replacing or joining it."""
    datas = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            datas.append(json.load(f))
    data = datas[0]
    for later in datas[1:]:
        data["results"].update(later["results"])
    if len(datas) > 1:
        data["meta"]["commit"] = "/".join(dict.fromkeys(d["meta"]["commit"] for d in datas))
        data["meta"]["reruns"] = [sorted(d["results"]) for d in datas[1:]]
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", help="bench/peers.py --json output(s)")
    ap.add_argument("-o", "--out", default=DEFAULT_OUT, help="PNG to write (default docs/peers.png)")
    args = ap.parse_args()
    plot(merged(args.json), args.out)


if __name__ == "__main__":
    main()
