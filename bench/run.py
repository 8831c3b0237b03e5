"""Recording overhead, measured in one run against unrecorded Python.

    python bench/run.py [--repeat N]

For each workload, the same source is compiled twice: plainly, and instrumented by squall. Both
run alternately in this process (best of N each, so machine noise hits both alike); the recorded
runs record into a fresh recording each time. Prints the slowdown ratio, the ns added per recorded
event, and the bytes the recording holds per entry.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

WORKLOADS = [
    # name, call, target ratio (calls mode), target ratio (full mode: docs/DESIGN.md, "Performance
    # targets": <= 2.0x on fib(25), <= 1.4x on loop/container code)
    ("fib(25)", "fib(25)", 2.0, 2.0),
    ("loop/dict", "loop_dict(200_000)", 1.2, 1.4),
    ("writes", "write_loop(200_000)", 1.2, 1.4),
]
MODES = ("calls", "full")
NS_TARGET = 15.0  # ns per recorded event


def load(instrumented: bool, mode: str = "full") -> dict:
    from squall._instrument import rewrite

    path = os.path.join(HERE, "workloads.py")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    if instrumented:
        code = rewrite.compile_instrumented(source, path, "bench_workloads", mode=mode)
    else:
        code = compile(source, path, "exec", dont_inherit=True)
    ns: dict = {"__name__": "bench_workloads"}
    exec(code, ns)
    return ns


def timed(ns: dict, expr: str) -> float:
    code = compile(expr, "<bench>", "eval")
    gc.collect()
    t0 = time.perf_counter()
    eval(code, ns)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args()

    import squall
    from squall import _engine

    plain = load(False)
    recorded = {m: load(True, m) for m in MODES}
    results = []
    for (name, expr, calls_target, full_target), mode in ((w, m) for w in WORKLOADS for m in MODES):
        target = calls_target if mode == "calls" else full_target
        best_plain = best_rec = float("inf")
        entries = bytes_ = 0
        for _ in range(args.repeat):
            best_plain = min(best_plain, timed(plain, expr))
            squall.api.clear_recordings()
            _engine.start_recording()
            t = timed(recorded[mode], expr)
            _engine.stop_recording()
            best_rec = min(best_rec, t)
            stats = _engine.engine_stats()
            entries, bytes_ = stats["entries"], stats["bytes"]
        squall.api.clear_recordings()
        ratio = best_rec / best_plain
        results.append(
            {
                "workload": name,
                "mode": mode,
                "plain_ms": round(best_plain * 1e3, 2),
                "recorded_ms": round(best_rec * 1e3, 2),
                "ratio": round(ratio, 2),
                "target": target,
                "entries": entries,
                "ns_per_event": round((best_rec - best_plain) * 1e9 / max(entries, 1), 1),
                "bytes_per_entry": round(bytes_ / max(entries, 1), 1),
            }
        )
    if args.json:
        print(json.dumps({"python": sys.version.split()[0], "results": results}))
        return 0
    print(f"squall recording overhead, Python {sys.version.split()[0]}, best of {args.repeat}")
    print(
        f"{'workload':<12} {'mode':<6} {'plain ms':>9} {'recorded ms':>12} {'ratio':>6} {'target':>7} {'entries':>9} {'ns/event':>9} {'B/entry':>8}"
    )
    for r in results:
        ok = "ok" if r["ratio"] <= r["target"] else "MISSED"
        if r["mode"] == "full" and r["ns_per_event"] > NS_TARGET:
            ok += f" (ns/event > {NS_TARGET:g})"
        print(
            f"{r['workload']:<12} {r['mode']:<6} {r['plain_ms']:>9} {r['recorded_ms']:>12} {r['ratio']:>6} {'<=' + str(r['target']):>7} "
            f"{r['entries']:>9} {r['ns_per_event']:>9} {r['bytes_per_entry']:>8}  {ok}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
