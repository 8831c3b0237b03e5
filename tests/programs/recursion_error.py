"""Unbounded recursion hitting RecursionError, caught by the program."""
import sys


def dive(n):
    return dive(n + 1)


def main():
    depth, f = 0, sys._getframe()
    while f is not None:
        depth, f = depth + 1, f.f_back
    sys.setrecursionlimit(depth + 6)  # room for a few levels of dive, whatever runs us
    try:
        dive(0)
    except RecursionError as e:
        return f"caught {type(e).__name__}"


print(main())
