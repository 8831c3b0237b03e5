# From pyperformance 1.14.0 (MIT license, bench/pyperf/README.md),
# pyperformance/data-files/benchmarks/bm_async_generators/run_benchmark.py, unchanged but for
# the pyperf.Runner block, replaced by run(scale) at the end.
"""
Benchmark recursive async generators implemented in python
by traversing a binary tree.

Author: Kumar Aditya
"""

from __future__ import annotations

from collections.abc import AsyncIterator



class Tree:
    def __init__(self, left: Tree | None, value: int, right: Tree | None) -> None:
        self.left = left
        self.value = value
        self.right = right

    async def __aiter__(self) -> AsyncIterator[int]:
        if self.left:
            async for i in self.left:
                yield i
        yield self.value
        if self.right:
            async for i in self.right:
                yield i


def tree(input: range) -> Tree | None:
    n = len(input)
    if n == 0:
        return None
    i = n // 2
    return Tree(tree(input[:i]), input[i], tree(input[i + 1:]))

async def bench_async_generators() -> None:
    async for _ in tree(range(100000)):
        pass


def run(scale=1):
    """Traverse the 100,000-node tree with async generators, in one event loop per pass."""
    import asyncio

    for _ in range(LOOPS * scale):
        asyncio.run(bench_async_generators())


LOOPS = 2
