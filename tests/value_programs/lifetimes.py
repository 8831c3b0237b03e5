"""When the program's objects die, recorded or not: ``python lifetimes.py SCENARIO`` records a
value (as a call argument, a return value and an expression value), drops the program's last
reference to it and prints what it sees: when ``__del__`` and ``weakref.finalize`` callbacks ran,
whether weak references are dead, before and after ``gc.collect()``. The output must be the same
under ``squall run`` as under plain ``python``.
"""

import gc
import sys
import weakref

EVENTS = []


def log(text):
    EVENTS.append(text)


class Node:
    def __init__(self, name):
        self.name = name
        self.peer = None

    def __del__(self):
        log(f"__del__ {self.name}")


class Member:
    """Held by a value that cannot be weakly referenced: it says when that value let it go."""

    def __init__(self, name):
        self.name = name

    def __del__(self):
        log(f"__del__ {self.name}")


class Slotted:
    __slots__ = ("member", "n")

    def __init__(self, member):
        self.member = member
        self.n = 1


def take(v):
    return None


def give(v):
    return v


def record(v):
    """Records v as an argument, a return value and an expression value."""
    take(v)
    v = give(v)
    box = [v]
    if box[0] is not None:
        pass


def plain_object():
    x = Node("x")
    record(x)
    alive = weakref.ref(x)
    weakref.finalize(x, log, "finalize x")
    log("del x")
    del x
    log(f"after del: x alive {alive() is not None}")
    gc.collect()
    log(f"after collect: x alive {alive() is not None}")


def cycle():
    c = Node("c")
    c.peer = c
    record(c)
    alive = weakref.ref(c)
    weakref.finalize(c, log, "finalize c")
    log("del c")
    del c
    log(f"after del: c alive {alive() is not None}")
    log(f"collect found garbage: {gc.collect() > 0}")
    log(f"after collect: c alive {alive() is not None}")


def holder(kind):
    """A value that cannot be weakly referenced (a __slots__ object, a dict, a list, a tuple),
    watched through the object it holds."""
    m = Member(f"member of {kind}")
    if kind == "slots":
        v = Slotted(m)
    elif kind == "dict":
        v = {"member": m, "n": 1}
    elif kind == "list":
        v = [m, 1]
    elif kind == "tuple":
        v = (m, 1)
    record(v)
    alive = weakref.ref(m)
    weakref.finalize(m, log, f"finalize member of {kind}")
    del m
    log(f"del the {kind}")
    del v
    log(f"after del: member alive {alive() is not None}")
    gc.collect()
    log(f"after collect: member alive {alive() is not None}")


def main(scenario):
    gc.collect()
    if scenario == "object":
        plain_object()
    elif scenario == "cycle":
        cycle()
    else:
        holder(scenario)
    log("end")
    print("\n".join(EVENTS))


if __name__ == "__main__":
    main(sys.argv[1])
