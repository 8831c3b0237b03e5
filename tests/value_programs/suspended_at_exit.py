"""Generators still suspended when the program ends: Python closes them at shutdown, after it
has restored the builtins it started with. Their `finally` blocks, loops and handlers run then."""

import contextlib


def counted():
    try:
        yield 1
        yield 2
    finally:
        print("counted closed")


def looping(items):
    for i in items:
        try:
            yield i
        except GeneratorExit:
            print("looping closed at", i)
            raise


@contextlib.contextmanager
def held():
    print("held entered")
    try:
        yield
    finally:
        print("held left")


def holding():
    with held():
        yield "in"


a = counted()
print(next(a))
b = looping([10, 20])
print(next(b))
c = holding()
print(next(c))
print("end")
