"""Two squall installs on the same benchmarks, runs interleaved: before/after a change.

    python bench/pyperf/ab.py --a /tmp/base-venv/bin/python --b .venv/bin/python \\
        --only nbody,go --mode full --repeat 3

Each round runs plain Python, then ``squall run`` of install A, then of install B, for every
benchmark, so that the load of a shared machine hits all three alike; prints per benchmark the
best work time of each (``bench_one.py``'s PYPERF-RESULT), the ratios to plain and B/A, and
peak RSS (``os.wait4``). Results of A and B must have the same digest as plain's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_ONE = os.path.join(HERE, "bench_one.py")
TAG = "PYPERF-RESULT"


def run(argv: list[str]) -> tuple[dict, float]:
    """Runs argv; its PYPERF-RESULT and its peak RSS in MB."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(argv, stdout=fo, stderr=fe, cwd=HERE, text=True)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0  # reaped here: Popen must not wait for it again
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    rss = usage.ru_maxrss / 1024
    for line in out.splitlines():
        if line.startswith(TAG):
            return json.loads(line[len(TAG) :]), rss
    raise SystemExit(f"no {TAG} line from {' '.join(argv)}:\n{out[-2000:]}\n{err[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the Python of install A (before)")
    ap.add_argument("--b", required=True, help="the Python of install B (after)")
    ap.add_argument("--only", required=True, help="comma-separated benchmark names")
    ap.add_argument("--mode", default="full", choices=("full", "calls"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    args.a, args.b = os.path.abspath(args.a), os.path.abspath(args.b)
    names = args.only.split(",")
    best: dict[tuple[str, str], float] = {}
    rss: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rec.sqrec")
        for _ in range(args.repeat):
            for name in names:
                variants = {
                    "plain": [sys.executable, BENCH_ONE, name],
                    "A": [
                        args.a,
                        "-m",
                        "squall",
                        "run",
                        "--mode",
                        args.mode,
                        "-o",
                        out,
                        BENCH_ONE,
                        name,
                    ],
                    "B": [
                        args.b,
                        "-m",
                        "squall",
                        "run",
                        "--mode",
                        args.mode,
                        "-o",
                        out,
                        BENCH_ONE,
                        name,
                    ],
                }
                digests = set()
                for key, argv in variants.items():
                    res, peak = run(argv)
                    digests.add(res["result"])
                    k = (name, key)
                    best[k] = min(best.get(k, math.inf), res["work_s"])
                    rss[k] = max(rss.get(k, 0.0), peak)
                if len(digests) != 1:
                    raise SystemExit(f"{name}: results differ between plain, A and B")
    print(f"mode {args.mode}, best of {args.repeat}; A = {args.a}, B = {args.b}")
    print(f"{'benchmark':16} {'plain s':>8} {'A x':>7} {'B x':>7} {'B/A':>6}  RSS MB plain / A / B")
    ga = gb = 0.0
    for name in names:
        p, a, b = (best[(name, k)] for k in ("plain", "A", "B"))
        ga += math.log(a / p)
        gb += math.log(b / p)
        r = " / ".join(f"{rss[(name, k)]:.0f}" for k in ("plain", "A", "B"))
        print(f"{name:16} {p:8.3f} {a / p:7.2f} {b / p:7.2f} {b / a:6.2f}  {r}")
    n = len(names)
    print(f"{'geomean':16} {'':8} {math.exp(ga / n):7.2f} {math.exp(gb / n):7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
