"""pyperformance benchmarks run plain and under squall, side by side, in one run.

    python bench/pyperf/run.py [--repeat N] [--timeout S] [--only a,b] [--peers] [--object-depth N] [--floor] [--json OUT]

Each benchmark (benchmarks/bm_NAME.py, copied from pyperformance) runs in a process of its own,
one per variant: plain Python, ``squall run --mode full -o FILE`` and ``squall run --mode calls
-o FILE`` (saved to a file, as users run it), and with ``--peers`` the tools a user would pick
instead: cProfile, VizTracer and pyttd where they are installed; with ``--floor`` both modes'
rewritten code run with recording off (floor_one.py: what the entry points' calls cost alone).
The variants of a benchmark alternate (plain, full, calls, plain, full, calls, ...)
``--repeat`` times, so that noise on this shared machine hits them alike, and medians are
reported.

Measured per run: the seconds of work inside the process (bench_one.py times ``run(scale)``
alone, imports excluded), the whole process's wall time (start-up, instrumenting, the final
save), its peak RSS (``os.wait4``), and for squall the entries recorded, read from its summary
on stderr: a recorded run whose summary shows no entries did not record the benchmark and gets
no ratio. A run that exceeds ``--timeout`` is killed and reported as a timeout; a run whose
result differs from the plain run's is reported as such. A recorded run whose summary says
LIMITS HIT stopped recording part of the way (the memory limit): it is reported as "memory
limit" with its work ratio, a lower bound, and counts as over the target like a timeout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from bench_one import RESULT_TAG

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BENCH_ONE = os.path.join(HERE, "bench_one.py")
FLOOR_ONE = os.path.join(HERE, "floor_one.py")
SUMMARY_START = "--- squall: recording summary ---"
ENTRIES_RE = re.compile(r"^total entries: (\d+)", re.MULTILINE)
LIMITS_HIT = "LIMITS HIT (recording is incomplete):"  # python/squall/summary.py
# Statuses of runs whose work ratio is a lower bound: killed, or recorded only part of the way.
BOUNDED = ("timeout", "memory limit")
TARGETS = (2.5, 4.0)  # the slowdowns the plot marks; the table counts benchmarks over the last


def benchmark_names() -> list[str]:
    """The benchmarks there are: benchmarks/bm_NAME.py, sorted by name."""
    folder = os.path.join(HERE, "benchmarks")
    return sorted(f[3:-3] for f in os.listdir(folder) if f.startswith("bm_") and f.endswith(".py"))


# --- the variants: how each tool runs a benchmark ------------------------------------------------


@dataclass
class Variant:
    """One way to run a benchmark: ``argv(name, scale, out)`` gives its command line, where
    ``out`` is a scratch path for the tool's output file (deleted after each run). Its ratios
    are against ``baseline``, the plain run on the same Python."""

    key: str
    label: str
    argv: Callable[[str, int, str], list]
    squall: bool = False
    baseline: str | None = "plain"  # None: it is a baseline itself
    missing: str | None = None  # why it cannot run here, if it cannot


def script(name: str, scale: int) -> list:
    """bench_one.py's command line after the interpreter or tool."""
    return [BENCH_ONE, name, str(scale)]


def beside(python: str, command: str) -> str:
    """The console script ``command`` installed beside the interpreter ``python``."""
    return os.path.join(os.path.dirname(python), command)


def plain_variant(key: str, python: str, label: str) -> Variant:
    return Variant(key, label, lambda n, s, out: [python] + script(n, s), baseline=None)


def squall_variant(mode: str, object_depth: int | None = None) -> Variant:
    """``squall run --mode MODE [--object-depth N] -o FILE bench_one.py NAME``."""
    squall = beside(sys.executable, "squall")
    extra = [] if object_depth is None else ["--object-depth", str(object_depth)]
    suffix = "" if object_depth is None else f" d{object_depth}"
    return Variant(
        mode + suffix.replace(" ", "-"),
        f"squall {mode}{suffix}",
        lambda n, s, out: (
            [squall, "run", "--mode", mode, *extra, "-o", out + ".sqrec"] + script(n, s)
        ),
        squall=True,
        missing=None if os.path.exists(squall) else "squall is not installed beside this Python",
    )


def floor_variant(mode: str) -> Variant:
    """``squall run --mode MODE --no-save floor_one.py NAME``: the rewritten benchmark with
    recording off, every entry point still called (floor_one.py)."""
    squall = beside(sys.executable, "squall")
    return Variant(
        "floor-" + mode,
        f"floor {mode}",
        lambda n, s, out: [squall, "run", "--mode", mode, "--no-save", "-q", FLOOR_ONE, n, str(s)],
        missing=None if os.path.exists(squall) else "squall is not installed beside this Python",
    )


def pyttd_variants(python: str | None) -> list[Variant]:
    """``pyttd record`` (PyPI's py-tt-debug, Python 3.12+) on ``python``, or on this Python when
    it has pyttd; on another Python, with a plain run there as its baseline."""
    if python is None and os.path.exists(beside(sys.executable, "pyttd")):
        python = sys.executable
    if python is None:
        why = "not installed beside this Python; --pyttd-python names one that has it"
        if sys.version_info < (3, 12):
            why = (
                f"not installable on this Python {platform.python_version()} (py-tt-debug "
                "needs 3.12+); --pyttd-python names a 3.12+ Python that has it"
            )
        return [Variant("pyttd", "pyttd", lambda n, s, out: [], missing=why)]
    pyttd = beside(python, "pyttd")
    record = Variant(
        "pyttd",
        "pyttd",
        lambda n, s, out: (
            [pyttd, "record", BENCH_ONE, "--db-path", out + ".db"] + ["--args", n, str(s)]
        ),
        missing=None if os.path.exists(pyttd) else f"no {pyttd}",
    )
    if python == sys.executable:
        return [record]
    version = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    record.baseline = "plain-pyttd"
    return [plain_variant("plain-pyttd", python, f"plain {version}"), record]


def variants(
    peers: bool, pyttd_python: str | None, object_depth: int | None = None, floor: bool = False
) -> list[Variant]:
    """Plain first (the runs after it are compared with it), squall's modes (and, with an
    ``object_depth``, both again at that depth; with ``floor``, both with recording off),
    then the peers: cProfile, VizTracer, pyttd."""
    chosen = [
        plain_variant("plain", sys.executable, "plain"),
        squall_variant("full"),
        squall_variant("calls"),
    ]
    if object_depth is not None:
        chosen += [squall_variant("full", object_depth), squall_variant("calls", object_depth)]
    if floor:
        chosen += [floor_variant("full"), floor_variant("calls")]
    if not peers:
        return chosen
    viztracer = beside(sys.executable, "viztracer")
    chosen += [
        Variant(
            "cprofile",
            "cProfile",
            lambda n, s, out: [sys.executable, "-m", "cProfile", "-o", os.devnull] + script(n, s),
        ),
        Variant(
            "viztracer",
            "VizTracer",
            lambda n, s, out: [viztracer, "--quiet", "-o", out + ".json", "--"] + script(n, s),
            missing=None if os.path.exists(viztracer) else "not installed (pip install viztracer)",
        ),
    ]
    return chosen + pyttd_variants(pyttd_python)


# --- one run --------------------------------------------------------------------------------------


@dataclass
class Run:
    """What one process of one variant measured. ``status`` is "ok", "timeout", "failed",
    "nothing recorded", "memory limit" or "result differs"; ``error`` the end of its stderr
    when not ok."""

    status: str
    work_s: float | None = None
    proc_s: float = 0.0
    rss_mb: float = 0.0
    entries: int | None = None
    output_mb: float = 0.0
    result: str | None = None
    error: str = ""


def wait_with_timeout(proc: subprocess.Popen, timeout: float):
    """Wait for ``proc``; kill its process group after ``timeout`` s. Returns (status, rusage,
    timed_out): ``os.wait4`` gives this child's own rusage, so its own peak RSS."""
    killed = threading.Event()

    def kill():
        killed.set()
        os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, rusage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, rusage, killed.is_set()


def tail(text: str, lines: int = 4) -> str:
    """The last few non-empty lines of ``text`` before squall's summary, if it printed one:
    where a traceback says what failed."""
    text = text.split(SUMMARY_START)[0]
    return "\n".join([line for line in text.splitlines() if line.strip()][-lines:])


def run_once(variant: Variant, name: str, scale: int, timeout: float, scratch: str) -> Run:
    """Run ``name`` once as ``variant`` and measure it; the tool's output file is removed."""
    out = os.path.join(scratch, f"{name}-{variant.key}")
    with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            variant.argv(name, scale, out), stdout=so, stderr=se, cwd=ROOT, start_new_session=True
        )
        rc, rusage, timed_out = wait_with_timeout(proc, timeout)
        proc_s = time.perf_counter() - t0
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read(), se.read()
    run = Run("ok", proc_s=proc_s, rss_mb=rusage.ru_maxrss / 1024, output_mb=remove_outputs(out))
    if variant.squall:
        found = ENTRIES_RE.findall(stderr)
        run.entries = int(found[-1]) if found else None
    report = [line for line in stdout.splitlines() if line.startswith(RESULT_TAG + " ")]
    if report:
        data = json.loads(report[-1][len(RESULT_TAG) + 1 :])
        run.work_s, run.result = data["work_s"], data["result"]
    if timed_out:
        run.status, run.error = "timeout", f"killed after {timeout:g} s"
    elif rc != 0 or not report:
        run.status, run.error = "failed", f"exit code {rc}: {tail(stderr)}"
    elif variant.squall and not run.entries:
        run.status, run.error = "nothing recorded", stderr.split(SUMMARY_START)[-1].strip()
    elif variant.squall and LIMITS_HIT in stderr:
        # Recording stopped part of the way (the memory limit): the work went on unrecorded
        # from there, so its ratio is a lower bound, like a timed-out run's.
        run.status, run.error = "memory limit", tail(stderr.split(LIMITS_HIT)[-1])
    return run


def remove_outputs(prefix: str) -> float:
    """Delete the files a tool wrote at ``prefix*``; returns their size in MB."""
    folder, base = os.path.split(prefix)
    size = 0
    for f in os.listdir(folder):
        if f.startswith(base):
            path = os.path.join(folder, f)
            size += os.path.getsize(path)
            os.remove(path)
    return size / 2**20


# --- many runs, summarised ------------------------------------------------------------------------


@dataclass
class Cell:
    """One benchmark under one variant: its runs and their medians (over ok runs only)."""

    runs: list = field(default_factory=list)
    status: str = "ok"
    work_s: float | None = None
    proc_s: float | None = None
    rss_mb: float | None = None
    entries: int | None = None
    output_mb: float | None = None
    error: str = ""


def summarise(runs: list[Run]) -> Cell:
    """Medians when every run was ok. Otherwise the first failure's status and error, and for
    timeouts the median work time of the runs that finished their work before the kill."""
    cell = Cell(runs=[asdict(r) for r in runs])
    med = statistics.median
    bad = [r for r in runs if r.status != "ok"]
    if bad:
        cell.status, cell.error = bad[0].status, bad[0].error
        if len(runs) > 1:
            cell.status += f" ({len(bad)}/{len(runs)})"
        worked = [r.work_s for r in runs if r.work_s is not None]
        if cell.status.startswith(BOUNDED) and worked:
            cell.work_s = med(worked)
        return cell
    cell.work_s = med(r.work_s for r in runs)
    cell.proc_s = med(r.proc_s for r in runs)
    cell.rss_mb = med(r.rss_mb for r in runs)
    cell.output_mb = med(r.output_mb for r in runs)
    if runs[0].entries is not None:
        cell.entries = int(med(r.entries for r in runs))
    return cell


def measure(name: str, chosen: list[Variant], args, scratch: str) -> dict:
    """All runs of one benchmark, the variants interleaved; returns {variant key: Cell}."""
    runnable = [v for v in chosen if not v.missing]
    runs: dict = {v.key: [] for v in runnable}
    for rep in range(args.repeat):
        for v in runnable:
            run = run_once(v, name, args.scale, args.timeout, scratch)
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
    return {key: summarise(rs) for key, rs in runs.items()}


def ratio(cell: Cell, plain: Cell, attr: str) -> float | None:
    """``cell``'s median over plain's for ``attr`` ("work_s" or "proc_s"), when both were
    measured (a timed-out cell may have a work time: its work ended, its process did not)."""
    if plain.status != "ok" or getattr(cell, attr) is None:
        return None
    return getattr(cell, attr) / getattr(plain, attr)


def geomean(xs: list[float]) -> float | None:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def totals(results: dict, v: Variant) -> dict:
    """One variant over the benchmarks: geometric means of its work and process ratios over
    those it finished, of its work ratios also counting timed-out and memory-limited runs whose
    work ended, and how many were over the last target (those two count as over)."""
    work, proc, work_all, over, n = [], [], [], 0, 0
    for cells in results.values():
        if v.key not in cells:
            continue
        n += 1
        cell, plain = cells[v.key], cells[v.baseline]
        w = ratio(cell, plain, "work_s")
        if w is not None:
            work_all.append(w)
        if cell.status == "ok" and w is not None:
            work.append(w)
            proc.append(ratio(cell, plain, "proc_s"))
        over += cell.status.startswith(BOUNDED) or (cell.status == "ok" and w > TARGETS[-1])
    return {
        "geomean_work": geomean(work),
        "geomean_process": geomean(proc),
        "geomean_work_with_timeouts": geomean(work_all),
        "finished": len(work),
        "work_measured": len(work_all),
        "benchmarks": n,
        "over_4x": over,
    }


# --- printing -------------------------------------------------------------------------------------


def ratio_text(cell: Cell | None, plain: Cell) -> str:
    """The cell's text: "work x (process x)", or the status that took their place, with the
    work ratio of a timed-out run whose work ended, or a lower bound for one whose did not."""
    if cell is None or plain.status != "ok":
        return "-"
    w, p = ratio(cell, plain, "work_s"), ratio(cell, plain, "proc_s")
    if cell.status == "ok":
        return f"{w:.2f} ({p:.2f})"
    if w is not None:
        return f"{cell.status}, work {w:.2f}"
    if cell.status.startswith("timeout"):
        return f"{cell.status}, work > {min(r['proc_s'] for r in cell.runs) / plain.work_s:.0f}"
    return cell.status


def mb(cell: Cell | None) -> str:
    return f"{cell.rss_mb:.0f}" if cell and cell.rss_mb is not None else "-"


def entries_text(cell: Cell | None) -> str:
    return f"{cell.entries:,}" if cell and cell.entries is not None else "-"


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """A Markdown table, columns padded to line up in a terminal too."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths]] + rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")


def print_squall(results: dict) -> None:
    header = [
        "benchmark",
        "plain s",
        "full x (proc x)",
        "calls x (proc x)",
        "RSS MB plain / full / calls",
        "entries full",
        "entries calls",
    ]
    rows = []
    for name, c in results.items():
        plain = c["plain"]
        rows.append(
            [
                name,
                f"{plain.work_s:.3f}" if plain.status == "ok" else plain.status,
                ratio_text(c.get("full"), plain),
                ratio_text(c.get("calls"), plain),
                f"{mb(plain)} / {mb(c.get('full'))} / {mb(c.get('calls'))}",
                entries_text(c.get("full")),
                entries_text(c.get("calls")),
            ]
        )
    print_table(header, rows)


def peer_text(cells: dict, v: Variant) -> str:
    """A baseline's median seconds, or a peer's ratios against its baseline."""
    cell = cells.get(v.key)
    if v.baseline is None:
        return (
            f"{cell.work_s:.3f}" if cell and cell.status == "ok" else (cell.status if cell else "-")
        )
    return ratio_text(cell, cells[v.baseline]) if v.baseline in cells else "-"


def print_peers(results: dict, peers: list[Variant]) -> None:
    header = ["benchmark"] + [
        f"{v.label} {'s' if v.baseline is None else 'x (proc x)'}" for v in peers
    ]
    rows = [[name] + [peer_text(c, v) for v in peers] for name, c in results.items()]
    print_table(header, rows)
    for v in peers:
        if v.missing:
            print(f"{v.label}: {v.missing}")


def print_totals(summary: dict, shown: list[Variant]) -> None:
    """Per variant: the geometric means, and how many benchmarks were over the last target."""

    def x(v):
        return f"{v:.2f}x" if v else "-"

    for v in shown:
        t = summary.get(v.key)
        if t:
            print(
                f"{v.label}: geometric mean {x(t['geomean_work'])} work "
                f"({x(t['geomean_process'])} whole process) over the {t['finished']}/"
                f"{t['benchmarks']} that finished, {x(t['geomean_work_with_timeouts'])} work "
                f"counting timed-out and memory-limited runs whose work ended ({t['work_measured']}); over "
                f"{TARGETS[-1]:g}x: {t['over_4x']}/{t['benchmarks']} (timeouts and memory limits count as over)"
            )


def print_failures(results: dict, chosen: list[Variant]) -> None:
    labels = {v.key: v.label for v in chosen}
    for name, cells in results.items():
        for key, cell in cells.items():
            if cell.status != "ok":
                print(f"{name} {labels[key]}: {cell.status}: {cell.error}")


# --- main -----------------------------------------------------------------------------------------


def meta(args) -> dict:
    """Where and how the numbers were measured."""

    def git(*cmd):
        r = subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True, check=False)
        return r.stdout.strip()

    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_average_at_start": os.getloadavg()[0],
        "repeat": args.repeat,
        "timeout_s": args.timeout,
        "scale": args.scale,
        "targets": list(TARGETS),
    }


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each variant (default 3)")
    ap.add_argument(
        "--timeout", type=float, default=300.0, help="seconds before a run is killed (default 300)"
    )
    ap.add_argument("--only", help="comma-separated benchmark names (default: all)")
    ap.add_argument(
        "--scale",
        type=int,
        default=1,
        help="units of work per run, passed to run(scale) (default 1)",
    )
    ap.add_argument(
        "--peers",
        action="store_true",
        help="also run cProfile, VizTracer and pyttd where installed",
    )
    ap.add_argument(
        "--pyttd-python",
        metavar="PY",
        help="with --peers: a Python 3.12+ that has pyttd (pip install py-tt-debug); "
        "pyttd's ratios are against plain runs on it",
    )
    ap.add_argument(
        "--object-depth",
        type=int,
        metavar="N",
        help="also run both modes under `squall run --object-depth N` (columns `full d0`, `calls d0` for 0)",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="also run both modes' rewritten code with recording off (floor_one.py): what the "
        "entry points' calls cost by themselves",
    )
    ap.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    args = ap.parse_args(argv)
    known = benchmark_names()
    args.names = args.only.split(",") if args.only else known
    unknown = sorted(set(args.names) - set(known))
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; there are: {', '.join(known)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    chosen = variants(args.peers, args.pyttd_python, args.object_depth, args.floor)
    info = meta(args)
    print(
        f"# commit {info['commit']}, Python {info['python']}, {info['machine']}, "
        f"{info['date']}, repeat {args.repeat}, timeout {args.timeout:g} s",
        file=sys.stderr,
    )
    results = {}
    with tempfile.TemporaryDirectory(prefix="pyperf-") as scratch:
        for name in args.names:
            results[name] = measure(name, chosen, args, scratch)
    info["load_average_at_end"] = os.getloadavg()[0]
    summary = {v.key: totals(results, v) for v in chosen if v.baseline and not v.missing}

    print(
        f"\ncommit {info['commit']}, Python {info['python']}, repeat {args.repeat}: "
        "median work ratio (whole-process ratio) against plain\n"
    )
    print_squall(results)
    print()
    print_totals(summary, chosen[1:3])
    peers_from = 3
    for extra in (args.object_depth is not None, args.floor):
        if extra:
            print()
            print_peers(results, chosen[peers_from : peers_from + 2])
            print_totals(summary, chosen[peers_from : peers_from + 2])
            peers_from += 2
    if args.peers:
        print()
        print_peers(results, chosen[peers_from:])
        print_totals(summary, chosen[peers_from:])
    print()
    print_failures(results, chosen)
    if args.json:
        data = {
            "meta": info,
            "variants": {
                v.key: {"label": v.label, "baseline": v.baseline, "missing": v.missing}
                for v in chosen
            },
            "results": {
                n: {k: asdict(c) for k, c in cells.items()} for n, cells in results.items()
            },
            "summary": summary,
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
