# From pyperformance 1.14.0 (MIT license, bench/pyperf/README.md),
# pyperformance/data-files/benchmarks/bm_gc_traversal/run_benchmark.py, unchanged but for
# the pyperf.Runner block, replaced by run(scale) at the end (pyperf.perf_counter -> time.perf_counter).
import time
import gc

N_LEVELS = 1000


def create_recursive_containers(n_levels):

    current_list = []
    for n in range(n_levels):
        new_list = [None] * n
        for index in range(n):
            new_list[index] = current_list
        current_list = new_list

    return current_list


def benchamark_collection(loops, n_levels):
    total_time = 0
    all_cycles = create_recursive_containers(n_levels)
    for _ in range(loops):
        gc.collect()
        # Main loop to measure
        t0 = time.perf_counter()
        collected = gc.collect()
        total_time += time.perf_counter() - t0

        assert collected is None or collected == 0

    return total_time


def run(scale=1):
    """gc.collect() over 1,000 levels of nested lists, 2 x LOOPS times."""
    benchamark_collection(LOOPS * scale, N_LEVELS)


LOOPS = 80
