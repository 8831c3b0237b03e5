"""Closures and a decorator using functools.wraps."""
import functools


def counted(fn):
    calls = []

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        calls.append(args)
        return fn(*args, **kwargs)

    wrapper.calls = calls
    return wrapper


def make_adder(n):
    def add(x):
        return x + n
    return add


@counted
def scale(x, factor=2):
    return x * factor


add3 = make_adder(3)
print(add3(scale(4)), scale(1, factor=10), scale.__name__, len(scale.calls))
