"""Positional-only, keyword-only, *args and **kwargs parameters."""


def f(a, b=2, /, c=3, *args, d, e=5, **kwargs):
    return (a, b, c, args, d, e, kwargs)


def g(*args, **kwargs):
    return len(args) + len(kwargs)


print(f(1, d=4))
print(f(1, 20, 30, 40, 50, d=4, z=26))
print(g(), g(1, 2, k=3))
