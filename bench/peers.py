"""squall against the tools a user would pick instead, on the same workloads, in one run.

    python bench/peers.py [--only fib,loop,nqueens] [--repeat N] [--timeout S] [--tracer-timeout S]
                          [--py312 PY] [--json OUT]

Workloads: bench/run.py's ``fib`` and ``loop`` (bench/workloads.py; units of 30–60 ms) and
pyperformance programs of bench/pyperf/benchmarks, each run by bench/peers_one.py in a process of
its own per tool, the tools of one workload alternating ``--repeat`` times (medians reported), so
that this shared machine's noise hits them alike. Per run: the seconds of work (timed inside the
process), the whole process's seconds, its peak RSS (``os.wait4``), and whether the work's result
equals the plain run's. The machinery (one run, medians, timeouts, ratios) is
bench/pyperf/run.py's; the tools:

- plain Python; ``squall run --mode full|calls -o FILE`` (saved, as a user runs it);
- profilers: cProfile (``-m cProfile``), VizTracer (``viztracer -o FILE``, its defaults);
- tracers that record values: hunter (CallPrinter + VarsSnooper to a file), PySnooper and snoop
  (their snooping decorators, every call deep, to a file), birdseye (every function of the
  workload traced into its SQLite database);
- pyttd (PyPI ``py-tt-debug``: Python 3.12+ only) on the Python that ``--py312`` names, with a
  plain run on that Python as its baseline.

A tool that is not installed beside this Python is listed as missing, with the reason. The
tracers that record values (and pyttd) take hundreds of times plain's time: they get a timeout of
their own (``--tracer-timeout``), and a run killed at it shows the lower bound it proves.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_ONE = os.path.join(HERE, "peers_one.py")
sys.path.insert(0, os.path.join(HERE, "pyperf"))
pyperf = importlib.import_module("run")  # bench/pyperf/run.py: Variant, measure, totals, ...

Variant = pyperf.Variant
DEFAULT_WORKLOADS = ["fib", "loop", "nqueens", "richards", "float", "nbody", "raytrace"]
# tool key -> (label, module to import to know it is installed, file suffix of what it writes)
IN_PROCESS = {
    "hunter": ("hunter", "hunter", ".txt"),
    "pysnooper": ("PySnooper", "pysnooper", ".txt"),
    "snoop": ("snoop", "snoop", ".txt"),
    "birdseye": ("birdseye", "birdseye", ".db"),
}


def workload_names() -> list[str]:
    return ["fib", "loop"] + pyperf.benchmark_names()


def one(name: str, scale: int, *tool: str) -> list[str]:
    """peers_one.py's command line after the interpreter or tool."""
    return [PEERS_ONE, *tool, name, str(scale)]


def installed(module: str) -> bool:
    probe = [sys.executable, "-c", f"import {module}"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def in_process_variant(key: str) -> Variant:
    label, module, suffix = IN_PROCESS[key]
    return Variant(
        key,
        label,
        lambda n, s, out: [sys.executable] + one(n, s, "--tool", key, "--trace-out", out + suffix),
        missing=None if installed(module) else f"not installed (pip install {module})",
    )


def squall_variant(mode: str) -> Variant:
    squall = pyperf.beside(sys.executable, "squall")
    return Variant(
        mode,
        f"squall {mode}",
        lambda n, s, out: [squall, "run", "--mode", mode, "-o", out + ".sqrec"] + one(n, s),
        squall=True,
        missing=None if os.path.exists(squall) else "squall is not installed beside this Python",
    )


def pyttd_variants(py312: str | None) -> list[Variant]:
    """A plain run on ``py312`` (pyttd's baseline) and ``pyttd record`` there."""
    if py312 is None:
        why = "needs Python 3.12+ (py-tt-debug); --py312 names a Python that has it"
        return [Variant("pyttd", "pyttd", lambda n, s, out: [], missing=why)]
    pyttd = pyperf.beside(py312, "pyttd")
    version = subprocess.run(
        [py312, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return [
        Variant("plain312", f"plain {version}", lambda n, s, out: [py312] + one(n, s), baseline=None),
        Variant(
            "pyttd",
            "pyttd",
            lambda n, s, out: [pyttd, "record", PEERS_ONE, "--db-path", out + ".db"] + ["--args", n, str(s)],
            baseline="plain312",
            missing=None if os.path.exists(pyttd) else f"no {pyttd} (pip install py-tt-debug)",
        ),
    ]


def variants(py312: str | None) -> list[Variant]:
    viztracer = pyperf.beside(sys.executable, "viztracer")
    return [
        Variant("plain", "plain", lambda n, s, out: [sys.executable] + one(n, s), baseline=None),
        squall_variant("full"),
        squall_variant("calls"),
        Variant(
            "cprofile",
            "cProfile",
            lambda n, s, out: [sys.executable, "-m", "cProfile", "-o", os.devnull] + one(n, s),
        ),
        Variant(
            "viztracer",
            "VizTracer",
            lambda n, s, out: [viztracer, "--quiet", "-o", out + ".json", "--"] + one(n, s),
            missing=None if os.path.exists(viztracer) else "not installed (pip install viztracer)",
        ),
        *(in_process_variant(k) for k in IN_PROCESS),
        *pyttd_variants(py312),
    ]


def rss_text(cells: dict, v: Variant) -> str:
    cell = cells.get(v.key)
    if cell is None:
        return "-"
    if cell.rss_mb is not None:
        return f"{cell.rss_mb:.0f}"
    rss = [r["rss_mb"] for r in cell.runs]  # a timed-out run: its peak until the kill
    return f">= {max(rss):.0f}" if rss else "-"


TRACERS = {*IN_PROCESS, "pyttd"}  # the tools --tracer-timeout applies to


def measure(name: str, chosen: list[Variant], args, scratch: str) -> dict:
    """bench/pyperf/run.py's ``measure`` (the variants interleaved ``--repeat`` times, a run
    whose result differs from its baseline's marked so), with the tracers' own timeout."""
    runnable = [v for v in chosen if not v.missing]
    runs: dict = {v.key: [] for v in runnable}
    for rep in range(args.repeat):
        for v in runnable:
            timeout = args.tracer_timeout if v.key in TRACERS else args.timeout
            run = pyperf.run_once(v, name, args.scale, timeout, scratch)
            base = runs[v.baseline][-1] if v.baseline and runs[v.baseline] else None
            if run.status == "ok" and base and base.status == "ok" and run.result != base.result:
                run.status, run.error = "result differs", f"{run.result} != plain {base.result}"
            runs[v.key].append(run)
            shown = f"{run.work_s:.2f} s" if run.work_s is not None else "-"
            print(
                f"  {name} {v.label} #{rep + 1}: {run.status}, work {shown}, "
                f"process {run.proc_s:.2f} s, {run.rss_mb:.0f} MB",
                file=sys.stderr,
                flush=True,
            )
    return {key: pyperf.summarise(rs) for key, rs in runs.items()}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--only", help="comma-separated workloads (default: %(default)s)", default=",".join(DEFAULT_WORKLOADS)
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs of each tool (default 1)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is killed (default 300)")
    ap.add_argument(
        "--tracer-timeout",
        type=float,
        default=45.0,
        help="the same for hunter, PySnooper, snoop, birdseye and pyttd (default 45)",
    )
    ap.add_argument("--tools", help="comma-separated tool keys to run (default: all installed)")
    ap.add_argument("--scale", type=int, default=1, help="units of work per run (default 1)")
    ap.add_argument("--py312", metavar="PY", help="a Python 3.12+ that has pyttd")
    ap.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    args = ap.parse_args(argv)
    known = workload_names()
    args.names = args.only.split(",")
    unknown = sorted(set(args.names) - set(known))
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)}; there are: {', '.join(known)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OUTDATED_IGNORE", "1")  # birdseye's "new version" check, over network
    chosen = variants(args.py312)
    if args.tools:
        keys = set(args.tools.split(","))
        unknown = sorted(keys - {v.key for v in chosen})
        if unknown:
            sys.exit(f"peers.py: unknown tool(s) {', '.join(unknown)}; there are: {', '.join(v.key for v in chosen)}")
        # a tool's baseline runs with it, for its ratios
        keys |= {v.baseline for v in chosen if v.key in keys and v.baseline}
        chosen = [v for v in chosen if v.key in keys]
    info = pyperf.meta(args)
    info["tracer_timeout_s"] = args.tracer_timeout
    print(
        f"# commit {info['commit']}, Python {info['python']}, {info['machine']}, "
        f"{info['date']}, repeat {args.repeat}, timeout {args.timeout:g} s "
        f"(tracers {args.tracer_timeout:g} s)",
        file=sys.stderr,
    )
    results = {}
    with tempfile.TemporaryDirectory(prefix="peers-") as scratch:
        for name in args.names:
            results[name] = measure(name, chosen, args, scratch)
    info["load_average_at_end"] = os.getloadavg()[0]
    summary = {v.key: pyperf.totals(results, v) for v in chosen if v.baseline and not v.missing}

    shown = [v for v in chosen if not v.missing]
    print(
        f"\ncommit {info['commit']}, Python {info['python']}, repeat {args.repeat}: median work "
        "ratio (whole-process ratio) against plain on the same Python; seconds for baselines\n"
    )
    header = ["workload"] + [f"{v.label}{' s' if v.baseline is None else ''}" for v in shown]
    pyperf.print_table(header, [[n] + [pyperf.peer_text(c, v) for v in shown] for n, c in results.items()])
    print("\npeak RSS, MB (a timed-out run: at least its peak until the kill)\n")
    pyperf.print_table(
        ["workload"] + [v.label for v in shown], [[n] + [rss_text(c, v) for v in shown] for n, c in results.items()]
    )
    print()
    pyperf.print_totals(summary, [v for v in shown if v.baseline])
    for v in chosen:
        if v.missing:
            print(f"{v.label}: {v.missing}")
    print()
    pyperf.print_failures(results, shown)
    if args.json:
        data = {
            "meta": info,
            "variants": {v.key: {"label": v.label, "baseline": v.baseline, "missing": v.missing} for v in chosen},
            "results": {n: {k: asdict(c) for k, c in cells.items()} for n, cells in results.items()},
            "summary": summary,
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
