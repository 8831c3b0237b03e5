# From pyperformance 1.14.0 (MIT license, bench/pyperf/README.md),
# pyperformance/data-files/benchmarks/bm_coroutines/run_benchmark.py, unchanged but for
# the pyperf.Runner block, replaced by run(scale) at the end (pyperf.perf_counter -> time.perf_counter).
"""
Benchmark for recursive coroutines.

Author: Kumar Aditya
"""

import time


async def fibonacci(n: int) -> int:
    if n <= 1:
        return n
    return await fibonacci(n - 1) + await fibonacci(n - 2)


def bench_coroutines(loops: int) -> float:
    range_it = range(loops)
    t0 = time.perf_counter()
    for _ in range_it:
        coro = fibonacci(25)
        try:
            while True:
                coro.send(None)
        except StopIteration:
            pass
    return time.perf_counter() - t0


def run(scale=1):
    """Drive the recursive coroutine fibonacci(25) to completion, LOOPS times."""
    bench_coroutines(LOOPS * scale)


LOOPS = 20
