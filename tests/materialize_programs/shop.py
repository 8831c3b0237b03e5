"""Calls to re-run from their recorded arguments (values.materialize)."""
from collections import OrderedDict, deque
from dataclasses import dataclass, field


@dataclass
class Item:
    name: str
    price: float
    tags: list = field(default_factory=list)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b


class Node:
    def __init__(self, name):
        self.name = name
        self.peer = None


class Counts(dict):
    pass


def total(items, discount, extra):
    out = sum(i.price for i in items) * (1 - discount)
    return round(out + extra.a * extra.b, 2)


def describe(node, counts, queue, od):
    return f"{node.name}->{node.peer.name}->{node.peer.peer.name} {sorted(counts.items())} {list(queue)} {list(od)}"


def main():
    pen = Item("pen", 1.5, ["office"])
    items = [pen, Item("ink", 4.25), pen]
    r1 = total(items, 0.1, Slotted(2, 3))
    pen.price = 100.0  # after the call: the recorded arguments keep 1.5
    a, b = Node("a"), Node("b")
    a.peer = b
    b.peer = a
    r2 = describe(a, Counts(x=1, y=2), deque([1, 2]), OrderedDict([("k", 1)]))
    return r1, r2


if __name__ == "__main__":
    print(main())
