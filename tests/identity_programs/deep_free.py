"""Deep structures freed while their types' deallocations are watched by the recorder: CPython's
trashcan must still turn the recursive deallocation into a loop (without it: a C stack
overflow). Each structure is recorded, then freed."""
import sys


def observe(v):
    return None


def nested_lists(depth):
    x = []
    observe(x)
    for _ in range(depth):
        x = [x]
    observe(x)
    return x


def nested_dicts(depth):
    x = {}
    observe(x)
    for _ in range(depth):
        x = {"in": x}
    return x


def exception_chain(depth):
    e = KeyError(0)
    observe(e)
    for i in range(depth):
        nxt = KeyError(i)
        nxt.__context__ = e
        e = nxt
    return e


def nested_sets(depth):
    x = frozenset()
    observe(x)
    for _ in range(depth):
        x = frozenset([x])
    return x


for make in (nested_lists, nested_dicts, exception_chain, nested_sets):
    x = make(200_000)
    del x
    print(make.__name__, "freed")
sys.stdout.flush()
