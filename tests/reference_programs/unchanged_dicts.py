"""Instances recorded again while their `__dict__` changes, or not (`DictMemo` in encode.rs).

Each object gets a real dict (`vars(o)` makes it on 3.11+, where attributes otherwise live in
inline values), and is changed between records by code the recorder does not see: `exec`'d
functions (their `o.n = v` is a plain STORE_ATTR, specialized after a few runs), `vars(o).update`,
`list.append`. `show(tag, o)` is the recorded call; `SEEN` keeps what each record must show.
"""

SEEN = []

_ns = {}
exec(
    "def set_attr(o, v):\n"
    "    o.n = v\n"
    "def set_f(o, v):\n"
    "    o.f = v\n"
    "def append(xs, v):\n"
    "    xs.append(v)\n"
    "def replace_leaf(o, leaf):\n"
    "    o.leaf = leaf\n"
    "def rename(o, name):\n"
    "    o.name = name\n",
    _ns,
)
set_attr, set_f, append, replace_leaf, rename = (
    _ns["set_attr"],
    _ns["set_f"],
    _ns["append"],
    _ns["replace_leaf"],
    _ns["rename"],
)


class Leaf:
    def __init__(self, name):
        self.name = name


class Holder:
    def __init__(self):
        self.n = 0
        self.f = 0.5
        self.s = "s"
        self.items = []
        self.leaf = Leaf("first")


class Slotted:
    __slots__ = ("n", "f")

    def __init__(self):
        self.n = 0
        self.f = 0.5


def show(tag, o):
    return tag


def state(o):
    """What a record of `o` shows at depth 1: its fields, a leaf by its name."""
    out = {}
    for k in getattr(o, "__slots__", ()) or vars(o):
        v = getattr(o, k)
        out[k] = v.name if isinstance(v, Leaf) else list(v) if isinstance(v, list) else v
    return out


def record(tag, o):
    SEEN.append((tag, state(o)))
    show(tag, o)


def main():
    h = Holder()
    vars(h)  # a real dict from here on
    record("start", h)
    record("again", h)  # unchanged: replayed
    for i in range(20):
        # A different int each time: a freed one's address is often the next one's.
        set_attr(h, 2**40 + i)
        record("int", h)
    for i in range(20):
        set_f(h, i + 0.25)
        record("float", h)
    for i in range(5):
        append(h.items, i)  # the list changes, the dict does not
        record("append", h)
    vars(h).update(n=7, s="t" * 3)
    record("update", h)
    for i in range(10):
        # The old leaf dies; a new one often takes its address.
        replace_leaf(h, Leaf(f"leaf{i}"))
        record("leaf", h)
    leaf = h.leaf
    show("leaf itself", leaf)
    rename(leaf, "renamed")  # unseen: h's reference still finds the state before
    show("leaf itself", leaf)  # now recorded: h's next record must find it
    record("after leaf", h)
    h.__dict__ = {"n": 1, "items": [9]}
    record("new dict", h)
    record("new dict again", h)
    s = Slotted()
    for i in range(10):
        set_attr(s, 2**40 + i)
        set_f(s, i + 0.75)
        record("slots", s)


main()
