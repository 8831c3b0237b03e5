"""Unbounded recursion hitting RecursionError below instrumented frames, caught by the program.

The limit is reached in `bottomless` (compiled from a string, so squall does not instrument it),
four instrumented `dive` frames down: the exception then unwinds through those. Where the limit is
reached does not depend on the Python version: 3.9-3.11 count C calls (squall's entry points)
against the recursion limit and 3.12+ do not, so a limit reached in instrumented code itself comes
at a version-dependent depth, with a version-dependent message (that case is in test_rewrite.py).
"""
import sys

_ns = {}
exec("def bottomless(n):\n    return bottomless(n + 1)\n", _ns)
bottomless = _ns["bottomless"]


def dive(n):
    if n == 3:
        return bottomless(0)
    return dive(n + 1)


def main():
    depth, f = 0, sys._getframe()
    while f is not None:
        depth, f = depth + 1, f.f_back
    sys.setrecursionlimit(depth + 100)  # room for dive and squall's calls, whatever runs us
    try:
        dive(0)
    except RecursionError as e:
        return f"caught {type(e).__name__}: {e}"


print(main())
