"""What the program sees of its own objects' references after they were recorded (as call
arguments, return values and expression values): ``sys.getrefcount`` and the types of
``gc.get_referrers``. The output must be the same under ``squall run`` as under plain ``python``.
"""

import gc
import sys


class Item:
    def __init__(self, price):
        self.price = price


class Slotted:
    __slots__ = ("price",)

    def __init__(self, price):
        self.price = price


def take(v):
    return None


def give(v):
    return v


def record(v):
    take(v)
    v = give(v)
    box = [v]
    if box[0] is not None:
        pass


def make(kind):
    if kind == "object":
        return Item(1)
    if kind == "slots":
        return Slotted(1)
    if kind == "list":
        return [Item(1), [2]]
    if kind == "dict":
        return {"k": [1]}
    if kind == "tuple":
        return (Item(1), [2])
    raise ValueError(kind)


def referrer_types(x):
    return sorted(f"{type(r).__module__}.{type(r).__qualname__}" for r in gc.get_referrers(x))


HELD = {}


def main():
    for kind in ("object", "slots", "list", "dict", "tuple"):
        x = make(kind)
        HELD[kind] = x
        before = sys.getrefcount(x)
        record(x)
        record(x)
        after = sys.getrefcount(x)
        print(kind, "refcount", before, after, "referrers", referrer_types(x))
        if kind in ("list", "tuple"):
            print(kind, "member refcount", sys.getrefcount(x[0]), "referrers", referrer_types(x[0]))


if __name__ == "__main__":
    main()
