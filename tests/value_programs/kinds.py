"""Every kind of value, recorded three ways (a call argument, a return value, an expression
value), then changed after it was recorded in one of four ways:

- ``caller``: by the code of the frame that made the recorded call (``run_scenario``);
- ``function``: by another (instrumented) function;
- ``c``: by C code (``list.sort``, ``dict.update``, ``list.extend``, a slot's descriptor);
- ``thread``: by another thread (joined before going on).

A recording must show each value as it was at the entry, never its later state. Used by
tests/test_values_as_recorded.py (``squall run --mode full`` and in-process). Each scenario
checks that its change really happened (``state`` differs), so the old state it asserts in the
recording is not also the new one.
"""

import collections
import dataclasses
import threading


class Item:
    def __init__(self, name, price):
        self.name = name
        self.price = price


@dataclasses.dataclass
class DataItem:
    name: str
    price: float


class SlotItem:
    __slots__ = ("name", "price")

    def __init__(self, name, price):
        self.name = name
        self.price = price


PROPERTY_CALLS = [0]


class PropItem:
    def __init__(self, name, price):
        self.name = name
        self._price = price

    @property
    def price(self):
        PROPERTY_CALLS[0] += 1
        return self._price


class MyList(list):
    pass


class MyDict(dict):
    pass


def new(kind):
    if kind == "plain":
        return Item("pen", 1.25)
    if kind == "dataclass":
        return DataItem("pen", 1.25)
    if kind == "slots":
        return SlotItem("pen", 1.25)
    if kind == "property":
        return PropItem("pen", 1.25)
    if kind == "list":
        return [31, 11, 21]
    if kind == "dict":
        return {"b": 31, "a": 11}
    if kind == "set":
        return {31, 11}
    if kind == "nested":
        return [{"n": 31}, {"n": 11}]
    if kind == "list_subclass":
        return MyList([31, 11, 21])
    if kind == "dict_subclass":
        return MyDict(b=31, a=11)
    if kind == "deque":
        return collections.deque([31, 11, 21])
    if kind == "defaultdict":
        d = collections.defaultdict(list)
        d["a"].append(31)
        return d
    if kind == "tuple_of_list":
        return (31, [11, 21])
    raise ValueError(kind)


KINDS = ("plain", "dataclass", "slots", "property", "list", "dict", "set", "nested", "list_subclass",
         "dict_subclass", "deque", "defaultdict", "tuple_of_list")
HOWS = ("caller", "function", "c", "thread")


def state(kind, v):
    """What the value holds now, as plain data (reads storage only: no property, no repr)."""
    if kind in ("plain", "dataclass", "property"):
        return dict(vars(v))
    if kind == "slots":
        return {"name": v.name, "price": v.price}
    if kind in ("list", "list_subclass", "deque"):
        return list(v)
    if kind in ("dict", "dict_subclass"):
        return dict(v)
    if kind == "set":
        return sorted(v)
    if kind == "nested":
        return [dict(d) for d in v]
    if kind == "defaultdict":
        return {k: list(x) for k, x in v.items()}
    if kind == "tuple_of_list":
        return (v[0], list(v[1]))
    raise ValueError(kind)


# --- the recorded sites -------------------------------------------------------------------------


def produce(kind, how, v):
    return v


def observe(kind, how, v):
    return None


# --- changes made by another function (also the target of the thread) --------------------------


def change(kind, v):
    if kind in ("plain", "dataclass", "slots"):
        v.price = 7.75
    elif kind == "property":
        v._price = 7.75
    elif kind in ("list", "list_subclass", "deque"):
        v.append(99)
    elif kind in ("dict", "dict_subclass"):
        v["c"] = 99
    elif kind == "set":
        v.add(99)
    elif kind == "nested":
        v[0]["n"] = 99
    elif kind == "defaultdict":
        v["a"].append(99)
    elif kind == "tuple_of_list":
        v[1].append(99)


def run_scenario(kind, how):
    v = produce(kind, how, new(kind))
    before = state(kind, v)
    observe(kind, how, v)
    box = [v]
    if box[0] is not None:  # EXPR-SITE
        pass
    if how == "caller":
        # the same changes as `change`, written here, in the frame that made the recorded calls
        if kind in ("plain", "dataclass", "slots"):
            v.price = 7.75
        elif kind == "property":
            v._price = 7.75
        elif kind in ("list", "list_subclass", "deque"):
            v.append(99)
        elif kind in ("dict", "dict_subclass"):
            v["c"] = 99
        elif kind == "set":
            v.add(99)
        elif kind == "nested":
            v[0]["n"] = 99
        elif kind == "defaultdict":
            v["a"].append(99)
        elif kind == "tuple_of_list":
            v[1].append(99)
    elif how == "function":
        change(kind, v)
    elif how == "c":
        # changed by C code, which no instrumented line sees
        if kind in ("plain", "dataclass"):
            v.__dict__.update(price=7.75)
        elif kind == "slots":
            SlotItem.price.__set__(v, 7.75)
        elif kind == "property":
            v.__dict__.update(_price=7.75)
        elif kind in ("list", "list_subclass"):
            v.sort()
        elif kind == "deque":
            v.extend([99])
        elif kind in ("dict", "dict_subclass"):
            v.update(c=99)
        elif kind == "set":
            v.update([99])
        elif kind == "nested":
            v[0].update(n=99)
        elif kind == "defaultdict":
            v["a"].extend([99])
        elif kind == "tuple_of_list":
            v[1].extend([99])
    elif how == "thread":
        t = threading.Thread(target=change, args=(kind, v))
        t.start()
        t.join()
    after = state(kind, v)
    if after == before:
        raise AssertionError(f"scenario {kind}/{how} did not change its value: {after!r}")
    return after


def scalars(s, i, f, b, big, none, flag):
    return (s, i, f, b, big, none, flag)


def main():
    scalars("pen", 7, 1.25, b"\x00ab", 2**70, None, True)
    done = 0
    for kind in KINDS:
        for how in HOWS:
            run_scenario(kind, how)
            done += 1
    return {"scenarios": done, "property_calls": PROPERTY_CALLS[0]}


if __name__ == "__main__":
    print(main())
