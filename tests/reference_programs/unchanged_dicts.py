"""Instances and lists recorded again while they change, or not (`encode/memo.rs`).

Objects with a real dict (`vars(o)` makes it on 3.11+), objects whose attributes live in inline
values (3.11, 3.12) and lists are changed between records by code the recorder does not see:
`exec`'d functions (their `o.n = v` is a plain STORE_ATTR, specialized after a few runs; their
`xs[i] = v` a plain STORE_SUBSCR), `vars(o).update`, `list.append`; a freed object's address is
often the next one's. `show(tag, o)` is the recorded call; `SEEN` keeps what each record must
show.
"""

SEEN = []

# Code the recorder does not see (not rewritten): changes made by it are not recorded, and what
# `state` reads for SEEN is not recorded either (a record of a field's object would change what
# a later record of its holder may reuse).
UNRECORDED = """
def set_attr(o, v):
    o.n = v
def set_f(o, v):
    o.f = v
def append(xs, v):
    xs.append(v)
def replace_leaf(o, leaf):
    o.leaf = leaf
def rename(o, name):
    o.name = name
def set_item(xs, i, v):
    xs[i] = v
# The old value freed first: the new one is made at its address (free lists, pymalloc).
def set_big(o, x):
    o.n = None
    o.n = x + 2**40
    o.s = None
    o.s = "s%d" % x
def set_float(o, x):
    o.f = None
    o.f = x + 0.25
def set_items(xs, x):
    xs[0] = None
    xs[0] = x + 2**40
    xs[1] = None
    xs[1] = x + 0.5
    xs[3] = None
    xs[3] = "s%d" % x
# The same objects under other names, and an attribute moved to the end of the order.
def swap(o):
    o.n, o.s = o.s, o.n
def readd(o):
    n = o.n
    del o.n
    o.n = n
def new_leaf_in(xs, name):
    xs[0] = None
    xs[0] = Leaf(name)
class Leaf:
    def __init__(self, name):
        self.name = name
FIELDS = ("n", "f", "s", "items", "leaf")
def shown(v):
    # A leaf by its name, a list by its items, anything else by its text (keeping the object
    # would keep its address from being reused).
    if isinstance(v, Leaf):
        return v.name
    if isinstance(v, list):
        return [shown(x) for x in v]
    return repr(v)
def note(seen, tag, o):
    seen.append((tag, state(o)))
def state(o):
    # What a record of `o` shows at depth 1. Not `vars(o)`: it would make the dict of an
    # object whose attributes are inline values.
    if isinstance(o, list):
        return shown(o)
    return {k: shown(getattr(o, k)) for k in FIELDS if hasattr(o, k)}
"""
_ns: dict = {}
exec(UNRECORDED, _ns)
set_attr, set_f, append, replace_leaf, rename, set_item = (
    _ns["set_attr"],
    _ns["set_f"],
    _ns["append"],
    _ns["replace_leaf"],
    _ns["rename"],
    _ns["set_item"],
)
set_big, set_float, set_items, new_leaf_in = _ns["set_big"], _ns["set_float"], _ns["set_items"], _ns["new_leaf_in"]
swap, readd = _ns["swap"], _ns["readd"]
Leaf, state, note = _ns["Leaf"], _ns["state"], _ns["note"]


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
        set_big(h, i)
        set_float(h, i)
        record("same address", h)
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
    inline_values()
    lists()


def inline_values():
    """The same changes to an object whose attributes stay in inline values (no `vars`)."""
    h = Holder()
    record("inline start", h)
    record("inline again", h)
    for i in range(20):
        set_attr(h, 2**40 + i)
        set_f(h, i + 0.25)
        record("inline int float", h)
    for i in range(20):
        set_big(h, i)
        set_float(h, i)
        record("inline same address", h)
    for i in range(3):
        append(h.items, i)
        record("inline append", h)
    for i in range(10):
        replace_leaf(h, Leaf(f"inline leaf{i}"))
        record("inline leaf", h)
    leaf = h.leaf
    rename(leaf, "inline renamed")
    show("leaf itself", leaf)
    record("inline after leaf", h)
    for i in range(4):
        # Each record reads the fields in their order now: a memo of the last order must not
        # put a value under another field's name.
        swap(h) if i % 2 else readd(h)
        record("inline swapped or moved", h)


def lists():
    """Lists of scalars and of instances at the depth limit, changed in place."""
    xs = [2**40, 0.5, None, "s"]
    record("list start", xs)
    record("list again", xs)
    for i in range(20):
        set_item(xs, 0, 2**40 + i)
        set_item(xs, 1, i + 0.5)
        record("list int float", xs)
    for i in range(20):
        set_items(xs, i)
        record("list same address", xs)
    leaves = [Leaf("a"), Leaf("b")]
    box = Holder()
    box.items = leaves  # one level down: its leaves are references past the depth limit
    show("leaf itself", leaves[0])
    show("leaf itself", leaves[1])
    for tag in ("leaves", "leaves again"):
        record(tag, leaves)
        record(tag, box)
    for i in range(10):
        # The old leaf dies first; the new one, never recorded, often takes its address.
        new_leaf_in(leaves, f"new{i}")
        record("box replaced", box)
        record("leaves replaced", leaves)
    rename(leaves[1], "B")
    show("leaf itself", leaves[1])
    record("leaves after rename", leaves)
    record("box after rename", box)
    append(leaves, Leaf("c"))
    record("leaves appended", leaves)
    record("box appended", box)
    record("nested", [xs, leaves])
    skipped_memos()


def skipped_memos():
    """Lists whose items no record could reuse (small ints, `None`, lists) take their memo one
    record in sixteen (`memo_wanted`); the records between change them in place, so a record
    through the memo meets the items the memo holds while the lists' last node is another
    state. One record of each per turn (`note` is not recorded)."""
    ys = [1, 2, None]
    zs = [[1], [1]]
    for i in range(40):
        set_item(ys, 0, 5 if i % 2 else 1)
        note(SEEN, "small ints", ys)
        show("small ints", ys)
        set_item(zs[0], 0, 5 if i % 2 else 1)  # an item changed in place, the same object
        if i % 8 == 0:
            append(zs[1], i)
        note(SEEN, "nested lists", zs)
        show("nested lists", zs)


main()
