# From pyperformance 1.14.0 (MIT license, bench/pyperf/README.md),
# pyperformance/data-files/benchmarks/bm_generators/run_benchmark.py, unchanged but for
# the pyperf.Runner block, replaced by run(scale) at the end (pyperf.perf_counter -> time.perf_counter).
"""
Benchmark recursive generators implemented in python
by traversing a binary tree.

Author: Kumar Aditya
"""

from __future__ import annotations

from collections.abc import Iterator

import time


class Tree:
    def __init__(self, left: Tree | None, value: int, right: Tree | None) -> None:
        self.left = left
        self.value = value
        self.right = right

    def __iter__(self) -> Iterator[int]:
        if self.left:
            yield from self.left
        yield self.value
        if self.right:
            yield from self.right


def tree(input: range) -> Tree | None:
    n = len(input)
    if n == 0:
        return None
    i = n // 2
    return Tree(tree(input[:i]), input[i], tree(input[i + 1:]))

def bench_generators(loops: int) -> float:
    assert list(tree(range(10))) == list(range(10))
    range_it = range(loops)
    iterable = tree(range(100000))
    t0 = time.perf_counter()
    for _ in range_it:
        for _ in iterable:
            pass
    return time.perf_counter() - t0


def run(scale=1):
    """Traverse the 100,000-node tree with recursive generators, LOOPS times."""
    bench_generators(LOOPS * scale)


LOOPS = 10
