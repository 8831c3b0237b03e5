"""Big containers recorded again and again, changed in between: a container of 16 items or more
that is unchanged reuses its last node by its fingerprint (crates/squall_python/src/recorder/encode/
fingerprint.rs), so every way of changing one must show at the next record, and a change that
leaves it equal must show the same value.

``main()`` returns what each ``observe(tag, value)`` call was given, copied at the call."""

import copy
from array import array

SEEN = []


def observe(tag, value):
    return tag


def snap(tag, value):
    SEEN.append((tag, copy.deepcopy(value)))
    observe(tag, value)


def main():
    floats = [float(i) for i in range(40)]
    snap("floats", floats)
    snap("floats", floats)  # unchanged
    floats[3] = 3.5  # changed in place
    snap("floats", floats)
    floats[4] = float("4")  # an equal float at another address
    snap("floats", floats)
    floats.sort(reverse=True)  # by C code
    snap("floats", floats)
    floats.append(1e9)
    snap("floats", floats)
    del floats[:]
    floats.extend(float(i) for i in range(40))  # the first state again, in the same list
    snap("floats", floats)

    words = ["w%03d" % i for i in range(30)]
    snap("words", words)
    words[7] = "x%03d" % 7  # same length, other text
    snap("words", words)
    words[8] = "".join(["w", "008"])  # equal text, another str
    snap("words", words)

    nested = [[i, i + 1] for i in range(20)]
    snap("nested", nested)
    nested[5].append(99)  # an inner list changed
    snap("nested", nested)
    nested[6][0] = -1
    snap("nested", nested)
    nested[7] = [7, 8]  # an equal inner list, another object
    snap("nested", nested)

    big_ints = [10**12 + i for i in range(20)]  # ints past the inline range
    snap("big_ints", big_ints)
    big_ints[0] += 1
    snap("big_ints", big_ints)

    s = set(range(30))
    snap("set", s)
    s.discard(3)
    s.add(100)
    snap("set", s)
    for i in range(1000, 1100):  # grows its table
        s.add(i)
    snap("set", s)
    fs = frozenset(range(20, 60))
    snap("frozenset", fs)
    snap("frozenset", frozenset(range(20, 61)))

    tup = tuple(float(i) for i in range(20))
    snap("tuple", tup)
    snap("tuple", tuple(float(i) + 1 for i in range(20)))

    arrays = [array("d", [float(i)]) for i in range(20)]  # shown by type and identity
    snap("arrays", arrays)
    arrays[2] = array("d", [2.0])
    snap("arrays", arrays)

    long = list(range(5000))  # past max_length: the first 100 items are shown
    snap("long", long)
    long[50] = -7
    snap("long", long)
    long[4000] = -7
    snap("long", long)

    rows = [[float(i * 10 + j) for j in range(5)] for i in range(300)]  # past max_items
    snap("rows", rows)
    rows[2][1] = -1.0
    snap("rows", rows)
    rows[290][1] = -1.0
    snap("rows", rows)

    table = {"k%02d" % i: float(i) for i in range(20)}
    snap("dict", table)
    snap("dict", table)
    table["k05"] = -5.0  # a value changed
    snap("dict", table)
    del table["k06"]
    table["k06"] = 6.0  # the same pairs, in another order
    snap("dict", table)
    table.update({"k%02d" % i: 0.0 for i in range(10)})  # by C code
    snap("dict", table)

    # frozensets of scalars in a big list: once read whole, each is known by its identity
    sets = [frozenset(range(i, i + 5)) for i in range(20)]
    snap("frozensets", sets)
    snap("frozensets", sets)  # unchanged
    sets[3] = frozenset({-1, -2})  # another frozenset
    snap("frozensets", sets)
    for i in range(20):  # each freed, then a new one with other items, likely at its address
        sets[i] = None
        sets[i] = frozenset(range(100 + i, 105 + i))
    snap("frozensets", sets)
    sets[5] = frozenset({("a", 1), 2})  # one holding a tuple: read item by item
    snap("frozensets", sets)
    sets[5] = None
    sets[5] = frozenset({("a", 2), 2})
    snap("frozensets", sets)

    cycle = list(range(20))
    cycle.append(cycle)
    observe("cycle", cycle)
    observe("cycle", cycle)
    return SEEN


if __name__ == "__main__":
    main()
