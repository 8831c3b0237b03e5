"""Records an object of each kind, frees it, and makes objects of the same type until one lands
at the freed address (CPython reuses addresses at once, and lists and dicts come back through
free lists). Prints, per kind, whether the address was reused and whether the recorder took the
new object for the old one (`_engine.object_id`, the identity recorded at an address, is the
freed object's)."""
import collections
import json
import sys

from squall import _engine


def observe(v):
    return None


def counter():
    yield 1


async def job():
    return 1


class Plain:
    def method(self):
        return self


class Listy(list):
    pass


ONE = Plain()


def method_of(n):
    return ONE.method


KINDS = {
    "list": lambda n: [n],
    "dict": lambda n: {"n": n},
    "set": lambda n: {n},
    "list subclass": lambda n: Listy([n]),
    "object": lambda n: Plain(),
    "generator": lambda n: counter(),
    "coroutine": lambda n: job(),
    "exception": lambda n: KeyError(n),
    "function": lambda n: (lambda: n),
    "bound method": method_of,
    "deque": lambda n: collections.deque([n]),
}


def reuse(make):
    for attempt in range(200):
        x = make(attempt)
        observe(x)
        address, identity = id(x), _engine.object_id(x)
        if hasattr(x, "close"):
            x.close()
        del x
        y = make(attempt + 1000)
        if id(y) == address:
            merged = identity is not None and _engine.object_id(y) == identity
            if hasattr(y, "close"):
                y.close()
            return {"reused": True, "identified": identity is not None, "merged": merged}
        if hasattr(y, "close"):
            y.close()
    return {"reused": False, "identified": False, "merged": False}


json.dump({kind: reuse(make) for kind, make in KINDS.items()}, sys.stdout)
