"""Run one pyperformance benchmark in this process and print how long its work took.

    python bench/pyperf/bench_one.py NAME [SCALE]
    squall run --mode full -o /tmp/x.sqrec bench/pyperf/bench_one.py NAME

Imports ``benchmarks/bm_NAME.py`` (not timed), then times one call of its ``run(scale)`` with
``time.perf_counter`` and prints one line for the driver (run.py): the tag ``PYPERF-RESULT``
and a JSON object with the benchmark's name, the seconds of work and a digest of what run()
returned, so that a recorded run can be checked against the plain one. Anything else the
benchmark prints goes before that line. SCALE is positional so that tools which pass the
script's arguments through an option of their own (``pyttd record --args ...``) can pass it.
"""

import argparse
import hashlib
import importlib
import json
import time

RESULT_TAG = "PYPERF-RESULT"


def digest(value) -> str:
    """A short digest of ``repr(value)``: equal results give equal digests."""
    return hashlib.sha1(repr(value).encode()).hexdigest()[:12]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", help="benchmark name: benchmarks/bm_NAME.py")
    ap.add_argument("scale", type=int, nargs="?", default=1, help="units of work (default 1)")
    args = ap.parse_args()

    module = importlib.import_module(f"benchmarks.bm_{args.name}")
    t0 = time.perf_counter()
    result = module.run(args.scale)
    work_s = time.perf_counter() - t0
    report = {"name": args.name, "work_s": work_s, "result": digest(result)}
    print(RESULT_TAG, json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
