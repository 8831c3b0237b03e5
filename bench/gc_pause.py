"""What a full garbage collection costs while squall records (collect.rs), measured in one run.

    python bench/gc_pause.py [--objects N] [--repeat R]

Around each full collection squall lets go of what the program dropped (snapshotting it) and
holds the rest weakly, so that the collector sees the heap as without squall. This measures
`gc.collect()` with N recorded objects the program still holds and N it dropped, against the
same collection unrecorded, and the first collection after dropping (which snapshots them).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SOURCE = '''
class Item:
    def __init__(self, n):
        self.n = n

def touch(item):
    return item.n

def make(n):
    return [Item(i) for i in range(n)]
'''


def load(instrumented: bool) -> dict:
    from squall._instrument import rewrite

    if instrumented:
        code = rewrite.compile_instrumented(SOURCE, "<gc_bench>", "gc_bench", mode="full")
    else:
        code = compile(SOURCE, "<gc_bench>", "exec")
    ns: dict = {"__name__": "gc_bench"}
    exec(code, ns)
    return ns


def scenario(ns: dict, n: int) -> tuple:
    """(first collection after dropping half, a later collection) in seconds."""
    kept = ns["make"](n)
    dropped = ns["make"](n)
    for item in kept:
        ns["touch"](item)
    for item in dropped:
        ns["touch"](item)
    del item
    del dropped
    t0 = time.perf_counter()
    gc.collect()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    gc.collect()
    later = time.perf_counter() - t0
    del kept
    return first, later


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    from squall import api

    plain, recorded = load(False), load(True)
    best = {"plain": [1e9, 1e9], "recorded": [1e9, 1e9]}
    for _ in range(args.repeat):
        f, last = scenario(plain, args.objects)
        best["plain"] = [min(best["plain"][0], f), min(best["plain"][1], last)]
        api.clear_recordings()
        api.start_recording(install_hook=False)
        f, last = scenario(recorded, args.objects)
        api.stop_recording()
        alive = api.engine_stats()["objects_alive"]
        api.clear_recordings()
        best["recorded"] = [min(best["recorded"][0], f), min(best["recorded"][1], last)]
    (pf, pl), (rf, rl) = best["plain"], best["recorded"]
    print(f"gc.collect() with {args.objects:,} recorded objects held and {args.objects:,} dropped "
          f"(best of {args.repeat}); {alive:,} objects held by the recording after it")
    print(f"  first collection after the drop: plain {pf * 1e3:7.1f} ms  recorded {rf * 1e3:7.1f} ms"
          f"  (+{(rf - pf) * 1e9 / (2 * args.objects):.0f} ns per recorded object)")
    print(f"  a later collection:              plain {pl * 1e3:7.1f} ms  recorded {rl * 1e3:7.1f} ms"
          f"  (+{(rl - pl) * 1e9 / args.objects:.0f} ns per held object)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
