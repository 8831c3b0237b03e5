"""Prints at every level down to the recursion limit: the last level printed is plain python's."""


def down(n):
    print(n)
    down(n + 1)


try:
    down(0)
except RecursionError:
    print("stopped")
