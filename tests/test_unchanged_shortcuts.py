"""Shortcuts for values recorded again unchanged never show a stale state (issue 11, speed).

``reference_programs/unchanged_dicts.py`` records instances with real ``__dict__``s again and
again while code the recorder does not see changes them (an int or float field replaced, often
by an object at the freed one's address; a list field appended to; ``vars(o).update``; a field
instance freed and a new one made; the dict replaced; ``__slots__``). A record of an instance
whose dict is unchanged replays its last record (``DictMemo`` in encode.rs): each record must
still show the state the program saw at that call, live and from the file.
"""

from __future__ import annotations

import array
import sys
import types
from pathlib import Path

import pytest
import squall
from squall import api, indexes, values
from squall._instrument import rewrite
from test_values_as_recorded import SQUALL, _run

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "reference_programs" / "unchanged_dicts.py"


def _shows(q, deref, ns):
    """(tag, derefed object) of every ``show`` call, in order."""
    out = []
    for tid in q.all_flows().get(0, []):
        for e in q.get_referenced_maps_timeline(0, tid):
            if e["type"] == "fn-call" and e["fn_name"] == "show" and e["fn_ns"] == ns:
                tag, o = deref(e["fn_args_ref"])[:2]
                out.append((tag, o))
    return out


def _start_fresh():
    """A new live recording of flow 0, without the import hook (code is instrumented here)."""
    api.stop_recording()
    api.clear_recordings()
    api.set_flow(0)
    api.start_recording(install_hook=False)


def _live():
    _start_fresh()
    mod = types.ModuleType("ref_unchanged_dicts")
    mod.__file__ = str(PROGRAM)
    sys.modules[mod.__name__] = mod
    try:
        exec(
            rewrite.compile_instrumented(PROGRAM.read_text(encoding="utf-8"), str(PROGRAM), mod.__name__, mode="full"),
            mod.__dict__,
        )
    finally:
        api.stop_recording()
        sys.modules.pop(mod.__name__, None)
    try:
        return _shows(indexes._live, values.deref_val_id, mod.__name__), mod.SEEN
    finally:
        api.clear_recordings()


def _file(tmp_path):
    out = tmp_path / "unchanged.sqrec"
    r = _run([SQUALL, "run", "--no-summary", "--mode", "full", "-o", out, PROGRAM])
    assert r.returncode == 0, r.stderr
    rec = squall.load(out)
    # The program is deterministic: its own SEEN, from a plain run, is what each record saw.
    ns: dict = {"__name__": "unchanged_plain"}
    exec(compile(PROGRAM.read_text(encoding="utf-8"), str(PROGRAM), "exec"), ns)
    return _shows(rec, rec.deref_val_id, "__main__"), ns["SEEN"]


def _shown(v):
    """A recorded field or item as ``shown`` in the program writes it: a leaf by its name."""
    if isinstance(v, values.Earlier):
        v = v.value
    if isinstance(v, values.ObjectSnapshot):
        return v.attrs["name"]
    if isinstance(v, list):
        return [_shown(x) for x in v]
    return repr(v)


@pytest.mark.parametrize("front", ["live", "file"])
def test_each_record_shows_the_state_at_its_call(front, tmp_path):
    shows, seen = _live() if front == "live" else _file(tmp_path)
    shows = [(tag, o) for tag, o in shows if tag != "leaf itself"]
    assert [tag for tag, _ in shows] == [tag for tag, _ in seen]
    for n, ((tag, o), (_, expected)) in enumerate(zip(shows, seen)):
        if isinstance(o, list):
            got = _shown(o)
        else:
            assert isinstance(o, values.ObjectSnapshot), (n, tag, o)
            got = {k: _shown(v) for k, v in o.attrs.items()}
        assert got == expected, (n, tag, got, expected)


@pytest.mark.parametrize(
    ("tag", "field", "name"),
    [
        ("after leaf", "leaf", "renamed"),
        ("inline after leaf", "leaf", "inline renamed"),
        ("box after rename", 1, "B"),
    ],
)
def test_a_reference_in_a_replayed_record_finds_the_newer_state(tag, field, name):
    shows, _ = _live()
    (after,) = [o for t, o in shows if t == tag]
    leaf = after.attrs["items"][field] if isinstance(field, int) else after.attrs[field]
    # Recorded by `show("leaf itself", ...)` after the rename: the reference resolves to it.
    # The last-node table is direct-mapped (`encode::LastNodes`): when a node made between that
    # record and this one lands in the leaf's slot, the leaf no longer looks known and is read
    # whole instead, which shows the same state (seen once in ~20 CI runs, on 3.10).
    state = leaf.value if isinstance(leaf, values.Earlier) else leaf
    assert isinstance(state, values.ObjectSnapshot) and state.attrs["name"] == name, leaf


def test_a_new_object_at_a_freed_ones_address_is_not_the_old_reference():
    shows, _ = _live()
    for tag, first in (("leaves replaced", lambda o: o[0]), ("box replaced", lambda o: o.attrs["items"][0])):
        replaced = [first(o) for t, o in shows if t == tag]
        replaced = [x.value if isinstance(x, values.Earlier) else x for x in replaced]
        assert [x.attrs["name"] for x in replaced] == [f"new{i}" for i in range(10)], tag
        assert len({x.obj_id for x in replaced}) == 10, tag


INTS = [2**30 - 1, 2**30, -(2**30), 2**31, 2**59 + 7, -(2**60) - 3, 2**62 + 5, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1]
INTS += [2**89, 2**90 - 1, -(2**90) + 1, 2**90, 12345678901234567890123]


def test_ints_of_several_digits_are_read_exactly():
    """Ints of one to four 30-bit digits, at the edges of 64 bits: read from their digits
    (``ints::exact_int_value``), each shown as it is."""
    _start_fresh()
    src = "def keep(*xs):\n    return len(xs)\n\nkeep(*INTS)\nkeep([x for x in INTS])\n"
    mod = types.ModuleType("ref_ints")
    mod.INTS = INTS
    try:
        exec(rewrite.compile_instrumented(src, "<ints>", mod.__name__, mode="full"), mod.__dict__)
    finally:
        api.stop_recording()
    try:
        args = [
            values.deref_val_id(e["fn_args_ref"])
            for tid in indexes._live.all_flows().get(0, [])
            for e in indexes._live.get_referenced_maps_timeline(0, tid)
            if e["type"] == "fn-call" and e["fn_name"] == "keep"
        ]
    finally:
        api.clear_recordings()
    assert list(args[0][0]) == INTS
    assert list(args[1][0][0]) == INTS


def _record_keeps(top, steps):
    """``keep(tag, top)`` recorded (full mode, live) after each step of ``steps`` (tag, change),
    the changes made by this module's code, which is not recorded; each record's ``top``."""
    _start_fresh()
    src = "def keep(tag, x):\n    return tag\n\nfor tag, change in STEPS:\n    change()\n    keep(tag, TOP)\n"
    mod = types.ModuleType("ref_repeats")
    mod.TOP, mod.STEPS = top, steps
    try:
        exec(rewrite.compile_instrumented(src, "<repeats>", mod.__name__, mode="full"), mod.__dict__)
    finally:
        api.stop_recording()
    try:
        return [
            values.deref_val_id(e["fn_args_ref"])[:2]
            for tid in indexes._live.all_flows().get(0, [])
            for e in indexes._live.get_referenced_maps_timeline(0, tid)
            if e["type"] == "fn-call" and e["fn_name"] == "keep"
        ]
    finally:
        api.clear_recordings()


def _as_recorded(o, depth=5):
    """``o`` as a record shows it (lists of small ints, well inside the item budget): a list at
    the depth limit, never recorded above it, as ``("cut", len)``."""
    if isinstance(o, list):
        return ("cut", len(o)) if depth == 0 else [_as_recorded(x, depth - 1) for x in o]
    return o


def _normal(v):
    if isinstance(v, values.Truncated) and v.omitted == 0:
        return ("cut", v.length)
    if isinstance(v, values.Earlier):
        return ("earlier", _normal(v.value))
    if isinstance(v, list):
        return [_normal(x) for x in v]
    return v


def test_repeated_nested_lists_changed_in_place_show_each_state():
    """A big list of the same nested lists (``[row] * n``: its fingerprint walks a run of one
    object once, and containers at the depth limit are references by length) recorded again
    while code the recorder does not see changes them in place: a list at the depth limit
    appended to, or replaced by a new one (often at the freed one's address), a row reversed
    (C code), a run broken and mended, an inner list grown. Each record shows its state."""
    x = [1]
    deep = [x, x]
    leaf = [deep, deep]
    a, b = [leaf, leaf], [[5, 5]]
    row = [a, a, b]
    top = [row] * 16
    other = [[1]]
    seen = []

    def step(change):
        def run():
            change()
            seen.append(_as_recorded(top))

        return run

    def new_x():
        deep[0] = None
        deep[1] = None
        deep[0] = deep[1] = [7, 7, 7]

    def break_run():
        top[5] = other

    def mend_run():
        top[5] = row

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("x appended", lambda: x.append(2)),
        ("again", lambda: None),
        ("x replaced", new_x),
        ("again", lambda: None),
        ("row reversed", row.reverse),
        ("again", lambda: None),
        ("run broken", break_run),
        ("run mended", mend_run),
        ("leaf grown", lambda: leaf.append(deep)),
        ("again", lambda: None),
        ("b appended", lambda: b.append([6])),
        ("again", lambda: None),
    ]
    got = _record_keeps(top, [(tag, step(c)) for tag, c in changes])
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), expected in zip(got, seen):
        assert _normal(v) == expected, tag


def _calls_module(src, name):
    """Module `name` made of `src` instrumented in calls mode (recorded while recording is on)."""
    mod = types.ModuleType(name)
    exec(rewrite.compile_instrumented(src, f"<{name}>", name, mode="calls"), mod.__dict__)
    return mod


def test_lists_of_frozensets_recorded_again_reuse_their_nodes():
    """Lists of frozensets of scalars recorded over and over (pyperformance's meteor_contest)
    keep their fingerprints: more frozensets than the recorder's frozenset slots, so slots are
    taken by others in between, must not make every record a miss that encodes the list again
    (the fingerprint compared as it is walked once did: meteor_contest 26x -> 84x)."""
    _start_fresh()
    src = (
        "def keep(xs):\n    return len(xs)\n\n"
        "LISTS = [[frozenset((i, j, i * j)) for j in range(100)] for i in range(80)]\n"
        "def rounds(n):\n    for _ in range(n):\n        for xs in LISTS:\n            keep(xs)\n"
    )
    try:
        mod = _calls_module(src, "ref_frozen_lists")
        mod.rounds(3)
        before = squall._engine.engine_stats()["values"]
        mod.rounds(10)
        grown = squall._engine.engine_stats()["values"] - before
    finally:
        api.stop_recording()
        api.clear_recordings()
    # 800 records of unchanged lists: each is its last node again. Every record a miss grows
    # by ~80,000 nodes (each list with its 100 sets); a few misses where the address-keyed
    # caches collide cost up to several hundred (0 to 670 seen in one build's runs).
    assert grown < 8_000, grown


def test_a_class_recorded_again_shows_its_name_as_of_each_record():
    """A class recorded again reuses its node while its version tag is unchanged; renaming it
    (`__qualname__`, `__module__`) gives it a new tag, so the next record names it anew."""
    _start_fresh()
    src = (
        "class Shape:\n    pass\n\n"
        "def keep(cls):\n    return 1\n\n"
        "def run():\n"
        "    keep(Shape)\n    keep(Shape)\n"
        "    Shape.__qualname__ = 'Renamed'\n    keep(Shape)\n"
        "    Shape.__module__ = 'elsewhere'\n    keep(Shape)\n"
    )
    try:
        mod = _calls_module(src, "ref_class_names")
        mod.run()
        q = indexes._live
        (tid,) = q.all_flows()[0]
        args = [
            e["fn_args_ref"]
            for e in q.get_referenced_maps_timeline(0, tid)
            if e["type"] == "fn-call" and e["fn_name"] == "keep"
        ]
        shown = [str(values.deref_val_id(a)[0]) for a in args]
    finally:
        api.stop_recording()
        api.clear_recordings()
    assert shown == [
        "<class 'ref_class_names.Shape'>",
        "<class 'ref_class_names.Shape'>",
        "<class 'ref_class_names.Renamed'>",
        "<class 'elsewhere.Renamed'>",
    ], shown


def _plain(v):
    """A recorded list / set / frozenset of ints as lists (sets sorted)."""
    if isinstance(v, values.Earlier):
        v = v.value
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted(v)
    return v


def test_fingerprints_with_kept_identities_see_each_change():
    """A big container's fingerprint compared again trusts the identities it holds while none
    of them ended (``Identities::kept_since``): a frozenset or list at the same address as
    then is that object. Each way of putting another object there, or changing one in place,
    shows at the next record: a frozenset freed and another made at its address (``id``
    equal), a nested list the same, a nested list sorted and a set added to by C code, a
    nested list grown, emptied, shrunk, refilled, an item set to another immortal or to an int
    that is not one."""
    sets = [frozenset(range(i, i + 5)) for i in range(20)]
    rows = [[i, i + 1] for i in range(20)]
    bag = set(range(20))
    top = [sets, rows, bag]
    seen, same_address = [], []

    def step(change):
        def run():
            change()
            seen.append([[sorted(f) for f in sets], [list(r) for r in rows], sorted(bag)])

        return run

    def at_freed_address(holder, i, make):
        # Each one made is kept until one takes the freed object's address.
        made = []
        old = id(holder[i])
        holder[i] = None
        x = make(0)
        while id(x) != old and len(made) < 100_000:
            made.append(x)
            x = make(len(made))
        same_address.append(id(x) == old)
        holder[i] = x

    def new_frozenset():
        at_freed_address(sets, 3, lambda k: frozenset(range(100 + k, 105 + k)))

    def new_row():
        at_freed_address(rows, 4, lambda k: [40 + k, 41, 42])

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("again", lambda: None),
        ("frozenset at its address", new_frozenset),
        ("again", lambda: None),
        ("row at its address", new_row),
        ("again", lambda: None),
        ("row sorted", lambda: rows[2].sort(reverse=True)),
        ("again", lambda: None),
        ("set added to", lambda: bag.add(99)),
        ("again", lambda: None),
        ("row grown", lambda: rows[7].append(70)),
        ("again", lambda: None),
        # Rows of immortals (small ints, None, bools) are passed by one compare of their
        # addresses (`same_immortal_list`): each change in place shows too.
        ("row item set to True", lambda: rows[5].__setitem__(0, True)),
        ("again", lambda: None),
        ("row emptied", rows[6].clear),
        ("again", lambda: None),
        ("row holds a big int", lambda: rows[8].__setitem__(1, 10**6)),
        ("again", lambda: None),
        ("row shrunk", lambda: rows[9].remove(10)),
        ("again", lambda: None),
        ("row refilled", lambda: rows[6].extend([None, False])),
        ("again", lambda: None),
    ]
    got = _record_keeps(top, [(tag, step(c)) for tag, c in changes])
    assert same_address == [True, True]
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), expected in zip(got, seen):
        assert _plain(v) == expected, tag


class _Frozen(frozenset):
    pass


def test_a_frozenset_subclass_renamed_shows_its_new_name_in_a_big_list():
    """A frozenset of scalars known by its identity in a fingerprint carries its type's name:
    renaming the class between records shows at the next one (it showed the old name)."""
    sets = [_Frozen(range(i, i + 5)) for i in range(20)]
    old = _Frozen.__qualname__

    def rename():
        _Frozen.__qualname__ = "Renamed"

    try:
        got = _record_keeps([sets], [("start", lambda: None), ("again", lambda: None), ("renamed", rename)])
    finally:
        _Frozen.__qualname__ = old
    names = [v[0][0].type_name.rsplit(".", 1)[-1] for _, v in got]
    assert names == ["_Frozen", "_Frozen", "Renamed"], names


def test_runs_of_small_ints_none_and_bools_in_a_big_list_show_each_change():
    """Items that live as long as the interpreter (``None``, bools, the cached small ints
    -5..256) are compared by address, a run of them in one slice compare: an item changed to
    another such value, a run's neighbour turned into one (the runs join), a value past the
    cache (257, an int made anew each time), a list reversed by C code: each shows."""
    nums = [*range(10), 1000, *range(10)]
    seen = []

    def step(change):
        def run():
            change()
            seen.append([repr(x) for x in nums])  # no reference to the items kept

        return run

    def set_item(i, v):
        return lambda: nums.__setitem__(i, v)

    def other_int_at_its_address():
        # An int past the cache freed and another made, kept until one takes its address.
        old, made = id(nums[10]), []
        nums[10] = None
        x = int("2000")
        while id(x) != old and len(made) < 100_000:
            made.append(x)
            x = int(str(2000 + len(made)))
        assert id(x) == old
        nums[10] = x

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("small int changed", set_item(3, 4)),
        ("again", lambda: None),
        ("runs joined", set_item(10, 10)),
        ("again", lambda: None),
        ("runs split", lambda: nums.__setitem__(10, int("1000"))),  # held by the list only
        ("again", lambda: None),
        ("another int at its address", other_int_at_its_address),
        ("again", lambda: None),
        ("none and bools", lambda: nums.__setitem__(slice(0, 3), [None, True, False])),
        ("again", lambda: None),
        ("past the cache", set_item(5, int("257"))),
        ("cache's edge", set_item(5, 256)),
        ("negative", set_item(6, -5)),
        ("reversed", nums.reverse),
        ("again", lambda: None),
    ]
    got = _record_keeps([nums], [(tag, step(c)) for tag, c in changes])
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), expected in zip(got, seen):
        assert [repr(x) for x in _plain(v)[0]] == expected, tag


def test_big_lists_of_immortals_changed_in_place_show_each_state():
    """A big list whose items are all immortals, changed in place since its fingerprint, is
    made from its items' addresses (``Cx::immortals_changed``: go's lists of empty points,
    changed at every move and recorded at every call): each record shows the list as it was,
    through a run of changes stored as deltas, a change of most items (a full state), a return
    to an earlier state, an item past the cache and back, the list grown and shrunk by C code,
    in a list held twice (at the top and in an instance's field)."""
    cells = list(range(40))
    holder = _IdsHolder(cells)
    seen = []

    def step(change):
        def run():
            change()
            seen.append([repr(x) for x in cells])

        return run

    def set_item(i, v):
        return lambda: cells.__setitem__(i, v)

    def swap(i, j):
        def change():
            cells[i], cells[j] = cells[j], cells[i]

        return change

    first = list(cells)
    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("one item", set_item(3, 200)),
        ("swapped", swap(0, 39)),
        ("none and bools", lambda: cells.__setitem__(slice(10, 13), [None, True, False])),
        ("negative", set_item(20, -5)),
        ("again", lambda: None),
        ("most items", cells.reverse),
        ("one more", set_item(1, 7)),
        ("back to the first state", lambda: cells.__setitem__(slice(None), first)),
        ("again", lambda: None),
        ("past the cache", set_item(5, int("257"))),
        ("cache's edge", set_item(5, 256)),
        ("grown", lambda: cells.append(1)),
        ("changed after growing", set_item(0, 9)),
        ("shrunk", cells.pop),
        ("changed after shrinking", set_item(0, 8)),
        ("again", lambda: None),
    ]
    got = _record_keeps([cells, holder], [(tag, step(c)) for tag, c in changes])
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), expected in zip(got, seen):
        top, shown_holder = _plain(v)
        assert [repr(x) for x in top] == expected, tag
        assert [repr(x) for x in _plain(shown_holder.ids)] == expected, tag


def test_ints_of_every_width_in_a_big_set_and_list_show_each_change():
    """A big set's and a big list's ints are read once from their digits into the fingerprint:
    31 bits as inline values, 64 bits by value, wider ones not at all (the container is encoded).
    An int replaced by one of another width, by the same value made anew, by its neighbour, and
    one set of 64-bit hashes grown as go's is: each record shows the container as it was."""
    hashes = {2**62 + 5 * i for i in range(20)}
    nums = list(INTS) + [2**40 + i for i in range(10)]
    seen = []

    def step(change):
        def run():
            change()
            seen.append((sorted(hashes), list(nums)))  # copies: the items are ints

        return run

    def set_item(i, v):
        return lambda: nums.__setitem__(i, v)

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("64 bits to 31 bits", set_item(4, 7)),
        ("again", lambda: None),
        ("31 bits to 64 bits", set_item(0, 2**50)),
        ("again", lambda: None),
        ("the same value made anew", set_item(0, int(str(2**50)))),
        ("its neighbour", set_item(0, 2**50 + 1)),
        ("64 bits to 90 bits", set_item(5, 2**90)),
        ("again", lambda: None),
        ("90 bits to 64 bits", set_item(5, -(2**63))),
        ("again", lambda: None),
        ("a hash added", lambda: hashes.add(2**61 + 3)),
        ("again", lambda: None),
        ("a hash replaced", lambda: (hashes.discard(2**62), hashes.add(2**62 - 1))),
        ("a wide int added", lambda: hashes.add(2**70)),
        ("again", lambda: None),
    ]
    got = _record_keeps([hashes, nums], [(tag, step(c)) for tag, c in changes])
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), (want_hashes, want_nums) in zip(got, seen):
        assert _plain(v)[0] == want_hashes, tag
        assert _plain(v)[1] == want_nums, tag


def _at_address(make, old_id, kept):
    """``make()`` (a new object each call) until one lands at address ``old_id`` (the others
    kept alive in ``kept`` meanwhile, so that each try is at a new address)."""
    for _ in range(200_000):
        x = make()
        if id(x) == old_id:
            return x
        kept.append(x)
    raise AssertionError("no object was made at the freed address")


def test_bytes_at_a_reused_address_show_their_own_contents():
    """A bytes value is compared in place with the last node at its address (no copy made to
    compare): another bytes object later made at that address shows its own contents, whether
    within the string budget or cut at it (its prefix and its length both count)."""

    def new(content):
        return bytes(memoryview(content))  # a new object each time (one allocation), not a constant

    box = [new(b"abc" * 3)]
    seen, kept = [], []

    def step(change):
        def run():
            change()
            seen.append(bytearray(box[0]))  # a copy: the object itself is not kept

        return run

    def replace(content):
        def change():
            old = id(box[0])
            box[0] = None  # freed: the next bytes of its size may take its address
            box[0] = _at_address(lambda: new(content), old, kept)

        return change

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("same size, one byte other", replace(b"abcabcabd")),
        ("again", lambda: None),
        ("cut", lambda: box.__setitem__(0, new(b"x" * 1500))),
        ("again", lambda: None),
        ("cut, one byte longer", replace(b"x" * 1501)),
        ("cut, same length, other prefix", replace(b"y" * 1501)),
        ("again", lambda: None),
    ]
    got = _record_keeps(box, [(tag, step(c)) for tag, c in changes])
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), want in zip(got, seen):
        shown = v[0]
        if len(want) > 1000:
            assert isinstance(shown, values.CutBytes), tag
            assert (bytes(shown), shown.length) == (want[:1000], len(want)), tag
        else:
            assert shown == want, tag


def test_a_function_recorded_again_shows_its_name_and_identity_as_of_each_record():
    """A function is recorded by its type, identity and qualified name, compared with the last
    node at its address before a node is made: renamed, it shows its new name; another function
    made at a freed one's address shows another identity."""
    import types as _types

    def f():
        pass

    def make():
        made = _types.FunctionType(f.__code__, {})
        made.__qualname__ = "f"
        return made

    box = [make()]
    kept = []

    def rename(name):
        return lambda: setattr(box[0], "__qualname__", name)

    def replace():
        old = id(box[0])
        box[0] = None
        box[0] = _at_address(make, old, kept)

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("renamed", rename("g")),
        ("again", lambda: None),
        ("another at its address", replace),
        ("again", lambda: None),
    ]
    got = _record_keeps(box, changes)
    shown = [repr(v[0]) for _, v in got]
    assert [s.split("#")[0] for s in shown] == ["<function f"] * 2 + ["<function g"] * 2 + ["<function f"] * 2
    ids = [v[0].obj_id for _, v in got]
    assert ids[0] == ids[1] == ids[2] == ids[3] != ids[4] == ids[5], shown


class _Leaf:
    def __init__(self, name):
        self.name = name


class _Holder:
    def __init__(self):
        self.items = [3, 1, 2]
        self.f = 0.5
        self.n = 2**40
        self.leaf = _Leaf("first")
        self.k = 7


def _snapshot_as_seen(o):
    """(type name, fields) as a record of ``o`` at depth 1 shows them; its leaf, a reference
    past the depth limit, by the name in its state (shown with that state's class name). Scalars
    by their text: keeping them would keep their addresses from the next ones."""
    fields = {"items": [repr(x) for x in o.items], "f": repr(o.f), "n": repr(o.n), "leaf": o.leaf.name, "k": o.k}
    return type(o).__qualname__, fields


def _snapshot_recorded(v):
    leaf = v.attrs["leaf"]
    leaf_name = leaf.value.attrs["name"] if isinstance(leaf, values.Earlier) else leaf.attrs["name"]
    fields = {
        "items": [repr(x) for x in v.attrs["items"]],
        "f": repr(v.attrs["f"]),
        "n": repr(v.attrs["n"]),
        "leaf": leaf_name,
        "k": v.attrs["k"],
    }
    return v.type_name.rsplit(".", 1)[-1], fields


def test_an_instance_recorded_again_shows_each_change_its_first_pass_could_miss():
    """An instance whose attributes are inline values (3.11, 3.12) recorded again is first
    compared with its last record, and is that record's node when every attribute is as then
    (`memo_inline_whole`). Changes made between records by code the recorder does not see, which
    that comparison must not miss: a float rebound to an equal-looking new one at the freed
    one's address, a list it holds reordered by C code (the same items) or given a new item at
    a freed one's address, a field after a changed one, its leaf's class renamed (the reference
    checks its type's version tag) and its own class renamed (a new type name). Each record
    shows its state."""
    o = _Holder()
    seen = []

    def step(change):
        def run():
            change()
            seen.append(_snapshot_as_seen(o))

        return run

    def float_same_address():
        o.f = None
        o.f = len(seen) + 0.25

    def item_same_address():
        o.items[0] = None
        o.items[0] = 2**41 + len(seen)

    def rename(cls, name):
        def run():
            cls.__qualname__ = name

        return run

    def list_then_int():
        o.items.append(4)
        o.k = len(seen)

    def new_list_same_address():
        o.items = None
        o.items = [len(seen), 2**41 + len(seen), 4]

    def tuple_for_list():
        o.items = tuple(o.items)

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("float at the same address", float_same_address),
        ("float again", float_same_address),
        ("again", lambda: None),
        ("items sorted", lambda: o.items.sort()),
        ("again", lambda: None),
        ("item at the same address", item_same_address),
        ("again", lambda: None),
        ("list then a later int", list_then_int),
        ("again", lambda: None),
        ("a new list at the freed one's address", new_list_same_address),
        ("again", lambda: None),
        ("a tuple of its items", tuple_for_list),
        ("again", lambda: None),
        ("leaf's class renamed", rename(_Leaf, "RenamedLeaf")),
        ("again", lambda: None),
        ("holder's class renamed", rename(_Holder, "RenamedHolder")),
        ("again", lambda: None),
    ]
    try:
        got = _record_keeps(o, [(tag, step(c)) for tag, c in changes])
    finally:
        _Leaf.__qualname__, _Holder.__qualname__ = "_Leaf", "_Holder"
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), expected in zip(got, seen):
        assert isinstance(v, values.ObjectSnapshot), (tag, v)
        assert _snapshot_recorded(v) == expected, tag


class _Flat:
    """Attributes without containers: a record of one unchanged replays by each field's own
    check alone (`memo_inline_whole`, 3.11 and 3.12)."""

    def __init__(self):
        self.f = 0.5
        self.n = 2**40
        self.leaf = _Leaf("first")
        self.k = 7
        self.s = "text"


def _make_twin():
    class _Flat:  # the same qualified name and attributes as its twin, another class
        pass

    return _Flat


def test_an_instance_without_containers_recorded_again_shows_each_change_between_records():
    """An instance recorded again whose attributes are all as in its last record is that
    record's node (`memo_inline_whole`). Every change between records made by code the
    recorder does not see must still show: a float or int rebound to a new one (often at the
    freed one's address), an attribute deleted and set again (the same objects in a new
    order), the leaf replaced by a new one at the freed one's address, the class swapped for a
    twin of the same name. Each record shows its state, in its order. (``vars(o)`` is never
    asked for: it would move the attributes out of inline values.)"""
    o = _Flat()
    twin = _make_twin()
    order = ["f", "n", "leaf", "k", "s"]
    seen = []

    def step(change):
        def run():
            change()
            fields = {k: _flat_field(getattr(o, k)) for k in order}
            seen.append((type(o).__qualname__, list(order), fields))

        return run

    def float_same_address():
        o.f = None
        o.f = len(seen) + 0.25

    def int_same_address():
        o.n = None
        o.n = 2**40 + len(seen)

    def reorder():
        f = o.f
        del o.f
        o.f = f
        order.remove("f")
        order.append("f")

    def new_leaf_at_freed_address():
        o.leaf = None
        o.leaf = _Leaf("second %d" % len(seen))

    def twin_class():
        o.__class__ = twin

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("float at the same address", float_same_address),
        ("again", lambda: None),
        ("int at the same address", int_same_address),
        ("again", lambda: None),
        ("f deleted and set again", reorder),
        ("again", lambda: None),
        ("new leaf", new_leaf_at_freed_address),
        ("again", lambda: None),
        ("twin class", twin_class),
        ("again", lambda: None),
    ]
    got = _record_keeps(o, [(tag, step(c)) for tag, c in changes])
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), (qualname, names, fields) in zip(got, seen):
        assert isinstance(v, values.ObjectSnapshot), (tag, v)
        assert v.type_name.endswith("." + qualname), (tag, v.type_name)
        assert list(v.attrs) == names, tag
        assert {k: _flat_field(v.attrs[k]) for k in names} == fields, tag


def _flat_field(x):
    """A field as a record shows it: the leaf (live, or its recorded state) by its name."""
    if isinstance(x, values.Earlier):
        x = x.value
    if isinstance(x, (_Leaf, values.ObjectSnapshot)):
        return x.name if isinstance(x, _Leaf) else x.attrs["name"]
    return repr(x)


class _Flags:
    """Attributes that are mostly immortal objects (bools, `None`, cached small ints), a list
    and an int past the cache: a record of one unchanged twice in a row is compared by its
    order and values at once (`memo_inline_same`, 3.11 and 3.12)."""

    def __init__(self):
        self.on = False
        self.count = 0
        self.none = None
        self.items = [1]
        self.big = 10**6
        self.tail = True


def test_an_instance_of_immortal_attributes_recorded_again_shows_each_change():
    """Records of an unchanged instance, again and again, between changes the recorder does
    not see: a bool flipped, a small int stepped, `None` replaced by a small int, the last
    attribute flipped, an item appended to its list, an int past the small-int cache rebound
    (often at the freed one's address), a small int set back. Each record shows its state."""
    o = _Flags()
    names = ["on", "count", "none", "items", "big", "tail"]
    seen = []

    def step(change):
        def run():
            change()
            seen.append({k: repr(getattr(o, k)) for k in names})

        return run

    def setter(name, value):
        return lambda: setattr(o, name, value(getattr(o, name)))

    def big_at_same_address():
        o.big = None
        o.big = 10**6 + len(seen)

    changes = [
        ("start", lambda: None),
        ("flip on", setter("on", lambda v: not v)),
        ("count up", setter("count", lambda v: v + 1)),
        ("none to int", setter("none", lambda v: 5)),
        ("flip tail", setter("tail", lambda v: not v)),
        ("append", lambda: o.items.append(len(seen))),
        ("big again", big_at_same_address),
        ("count back", setter("count", lambda v: 3)),
        ("flip on back", setter("on", lambda v: not v)),
    ]
    steps = []
    for tag, change in changes:
        steps += [(tag, step(change)), (tag + ", again", step(lambda: None)), (tag + ", again 2", step(lambda: None))]
    got = _record_keeps(o, steps)
    assert [tag for tag, _ in got] == [tag for tag, _ in steps]
    for (tag, v), fields in zip(got, seen):
        assert isinstance(v, values.ObjectSnapshot), (tag, v)
        assert list(v.attrs) == names, tag
        assert {k: repr(v.attrs[k]) for k in names} == fields, tag


class _Row(array.array):
    __slots__ = ()


def test_opaque_items_without_identity_show_their_type_and_its_new_name_in_a_big_list():
    """Items the recorder cannot give an identity (C objects whose deaths it does not see, like
    ``array.array``) are their type alone in a big list's fingerprint; compared again, such a
    group is passed by the type's version tag. A subclass renamed between records shows its new
    name; an item replaced by an object of another such type shows that type."""
    rows = [_Row("d", [float(i)]) for i in range(20)]
    old = _Row.__qualname__

    def rename():
        _Row.__qualname__ = "RenamedRow"
        assert rows[0].tolist  # a method lookup gives the renamed type a new version tag

    def other_type():
        rows[5] = array.array("d", [5.0])

    try:
        got = _record_keeps(
            [rows],
            [("start", lambda: None), ("again", lambda: None), ("renamed", rename), ("other", other_type)],
        )
    finally:
        _Row.__qualname__ = old
    names = [[x.type_name.rsplit(".", 1)[-1] for x in v[0]] for _, v in got]
    assert names[0] == names[1] == ["_Row"] * 20, names[:2]
    assert names[2] == ["RenamedRow"] * 20, names[2]
    assert names[3] == ["RenamedRow"] * 5 + ["array"] + ["RenamedRow"] * 14, names[3]


class _IdsHolder:
    def __init__(self, ids):
        self.ids = ids


def _assert_row_holder_tuple_shown(top, holder, changes):
    """``top`` (a row, ``holder``, a tuple) recorded after each change of ``changes`` (tag,
    change); each record must show the row, the holder's ids and the tuple as they were then."""
    seen = []

    def step(change):
        def run():
            change()
            seen.append([[repr(x) for x in top[0]], [repr(x) for x in holder.ids], [repr(x) for x in top[2]]])

        return run

    got = _record_keeps(top, [(tag, step(c)) for tag, c in changes])
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), expected in zip(got, seen):
        if isinstance(v, values.Earlier):
            v = v.value
        shown_row, shown_holder, shown_tuple = v
        assert [repr(x) for x in shown_row] == expected[0], tag
        assert [repr(x) for x in shown_holder.ids] == expected[1], tag
        assert [repr(x) for x in shown_tuple] == expected[2], tag


def test_short_rows_of_immortals_recorded_again_show_each_change():
    """A list or tuple shorter than a fingerprint's minimum whose items are all immortals, found
    unchanged, keeps its items' addresses (``encode/rows.rs``): the next record with the same
    addresses reuses its node without encoding an item. Each change shows at the next record:
    an item set to another immortal or to an int past the cache, the list reversed and grown
    by C code, emptied, a new list made at the freed one's address (another identity), a tuple
    of immortals replaced, and the same row held by an instance's field."""
    holder = _IdsHolder([7, 8, 9])
    # The row is reached through `top` only, so that it can be freed below.
    top = [[1, 2, 3, None, True], holder, (4, 5, None)]
    identities = []

    def set_item(lst, i, v):
        return lambda: lst.__setitem__(i, v)

    def in_row(change):
        return lambda: change(top[0])

    def new_list_at_its_address():
        # The row freed and another made with the same items, kept until one takes its address.
        old, made = id(top[0]), []
        top[0] = None
        x = [1, 2, 3]
        while id(x) != old and len(made) < 100_000:
            made.append(x)
            x = [1, 2, 3]
        identities.append(id(x) == old)
        top[0] = x

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("again", lambda: None),
        ("immortal changed", in_row(lambda r: r.__setitem__(0, 5))),
        ("again", lambda: None),
        ("past the cache", in_row(lambda r: r.__setitem__(1, int("257")))),
        ("cache's edge", in_row(lambda r: r.__setitem__(1, 256))),
        ("again", lambda: None),
        ("reversed", in_row(list.reverse)),
        ("again", lambda: None),
        ("grown", in_row(lambda r: r.append(False))),
        ("again", lambda: None),
        ("emptied", in_row(list.clear)),
        ("again", lambda: None),
        ("field's row changed", set_item(holder.ids, 2, -5)),
        ("again", lambda: None),
        ("field replaced", lambda: setattr(holder, "ids", [7, 8, 9])),
        ("again", lambda: None),
        ("tuple replaced", set_item(top, 2, (4, 6, None))),
        ("again", lambda: None),
        ("new list at its address", new_list_at_its_address),
        ("again", lambda: None),
    ]
    _assert_row_holder_tuple_shown(top, holder, changes)
    assert identities == [True]


def _item_made_at_freed_address(row_now, i, make, reused):
    """A change: item ``i`` of the list ``row_now()`` freed and new ones made (another value
    each, one allocation each, of the freed one's size) until one takes its address, put in
    its place; ``reused`` gets whether one did."""

    def change():
        row = row_now()
        old, made = id(row[i]), []
        row[i] = None
        x = make(0)
        while id(x) != old and len(made) < 100_000:
            made.append(x)
            x = make(len(made))
        reused.append(id(x) == old)
        row[i] = x

    return change


def test_short_rows_of_scalars_recorded_again_show_each_change():
    """A short list or tuple of ints of 64 bits, floats and immortals, found unchanged, keeps
    its items' addresses and values (``encode/rows.rs``, rows of scalars: go's three 63-bit
    hashes per square): the next record with the same addresses and values reuses its node.
    Each change shows: an int or a float replaced, a new float or int made at the freed one's
    address with another value, an item past 64 bits (not a scalar row), a float turned into
    an int of the same value, an immortal among them changed, the row held by an instance's
    field, a tuple of floats replaced."""
    row = [int("9007199254740993"), float("0.5"), None, int("-4611686018427387907")]
    holder = _IdsHolder([float("1.25"), 2**40 + 1])
    top = [row, holder, (float("2.5"), float("3.5"))]
    reused = []

    def at_freed_address(lst, i, make):
        return _item_made_at_freed_address(lambda: lst, i, make, reused)

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("again", lambda: None),
        ("int replaced", lambda: row.__setitem__(0, int("9007199254740995"))),
        ("again", lambda: None),
        ("float replaced", lambda: row.__setitem__(1, float("0.75"))),
        ("again", lambda: None),
        ("float at its address", at_freed_address(row, 1, lambda k: 0.125 + k)),
        ("again", lambda: None),
        ("int at its address", at_freed_address(row, 3, lambda k: -(2**62) - 5 - k)),
        ("again", lambda: None),
        ("past 64 bits", lambda: row.__setitem__(0, 2**70 + 1)),
        ("again", lambda: None),
        ("back within 64 bits", lambda: row.__setitem__(0, int("-12345678901"))),
        ("again", lambda: None),
        ("float to int of its value", lambda: row.__setitem__(1, int(row[1]) if row[1] == int(row[1]) else 3)),
        ("again", lambda: None),
        ("immortal changed", lambda: row.__setitem__(2, True)),
        ("again", lambda: None),
        ("field's float changed", lambda: holder.ids.__setitem__(0, float("-1.25"))),
        ("again", lambda: None),
        ("tuple replaced", lambda: top.__setitem__(2, (float("2.5"), float("4.5")))),
        ("again", lambda: None),
    ]
    _assert_row_holder_tuple_shown(top, holder, changes)
    assert reused == [True, True]


def test_short_rows_of_scalars_changed_at_every_record_show_each_state():
    """A short row of scalars changed between every two records (nbody's lists of three floats,
    read through the memo and the rows of ``encode/rows.rs``) shows each state: floats changed
    one or all at a time, back to an earlier state, an int past the small-int cache or past 31
    bits, an immortal, grown and shrunk by C code, an item past 64 bits and back, a str among
    them, a float made at a freed float's address, a new list at the freed row's address
    (another identity), the same row held by an instance's field, a tuple replaced at every
    record."""
    holder = _IdsHolder([1, 2, 3])
    # The row is reached through `top` only, so that it can be freed below.
    top = [[float("0.5"), float("1.5"), float("2.5")], holder, (float("1.0"), 7)]
    reused = []

    def at_freed_address(i, make):
        return _item_made_at_freed_address(lambda: top[0], i, make, reused)

    def new_row_at_its_address():
        old, made = id(top[0]), []
        top[0] = None
        x = [float("9.5"), float("8.5")]
        while id(x) != old and len(made) < 100_000:
            made.append(x)
            x = [float("9.5"), float("8.5")]
        reused.append(id(x) == old)
        top[0] = x

    def in_row(change):
        return lambda: change(top[0])

    def step(k):
        def change():
            r = top[0]
            r[k % len(r)] = float(k) + 0.25
            holder.ids[k % 3] = k * 1000
            top[2] = (float(k) / 8, k)

        return change

    changes = [
        ("start", lambda: None),
        ("one float", in_row(lambda r: r.__setitem__(0, float("0.75")))),
        ("another float", in_row(lambda r: r.__setitem__(2, float("-2.5")))),
        ("all floats", in_row(lambda r: r.__setitem__(slice(None), [float("3.5"), float("4.5"), float("5.5")]))),
        (
            "back to an earlier state",
            in_row(lambda r: r.__setitem__(slice(None), [float("0.75"), float("1.5"), float("-2.5")])),
        ),
        ("past the cache", in_row(lambda r: r.__setitem__(1, int("1000")))),
        ("past 31 bits", in_row(lambda r: r.__setitem__(1, int("5000000000")))),
        ("an immortal", in_row(lambda r: r.__setitem__(1, None))),
        ("grown", in_row(lambda r: r.extend([float("6.5"), True]))),
        ("shrunk", in_row(lambda r: r.__delitem__(slice(1, 3)))),
        ("past 64 bits", in_row(lambda r: r.__setitem__(0, 2**80 + 3))),
        ("back within", in_row(lambda r: r.__setitem__(0, float("0.125")))),
        ("a str", in_row(lambda r: r.__setitem__(1, "s"))),
        ("scalars again", in_row(lambda r: r.__setitem__(1, float("7.5")))),
        ("a float at its address", at_freed_address(1, lambda k: 100.0 + k)),
        *[(f"step {k}", step(k)) for k in range(6)],
        ("a new row at its address", new_row_at_its_address),
        ("new row's float", in_row(lambda r: r.__setitem__(1, float("-8.5")))),
        ("again", lambda: None),
    ]
    _assert_row_holder_tuple_shown(top, holder, changes)
    assert reused == [True, True]


def test_a_short_row_of_inline_ints_found_unchanged_takes_the_budget_its_reading_would():
    """A kept row of scalars found unchanged takes from the item budget what reading its items
    would: one per float or int past 31 bits, none per int that encodes inline (1000 is past
    the small-int cache, so the row is kept with its values). It took one per int, so a value
    recorded again showed the items after the row cut shorter than its first records did."""
    row = [int("1000"), float("2.5"), int("3000"), int("-4000")]
    top = [row, [float(k) + 0.5 for k in range(12)]]
    before = values.get_snapshot_budget()
    values.set_snapshot_budget(max_items=10)
    try:
        got = _record_keeps(top, [("again", lambda: None)] * 4)
    finally:
        values.set_snapshot_budget(**before)
    shown = []
    for _, v in got:
        if isinstance(v, values.Earlier):
            v = v.value
        shown.append((list(v[0]), len(v[1]) if isinstance(v[1], list) else repr(v[1])))
    assert shown[0][0] == row
    assert shown == [shown[0]] * 4, shown


class _Square:
    # Slots: on 3.13 a freed instance with a managed dict is not the next one made of its
    # class (thousands are made first), one with slots is.
    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n


class _OtherSquare:
    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n


class _Board:
    def __init__(self, squares):
        self.squares = squares


def test_rows_of_references_recorded_again_name_each_object():
    """A list held by an instance read with no object level left is a row of references to its
    items' earlier states; found unchanged, it keeps its items' addresses, types and identities
    (``encode/rows.rs``), and the next record with the same addresses reuses its node. Each
    change shows at the next record as references to the objects the list then holds: an item
    replaced, an item freed and a new object made at its address (another identity), an item's
    class changed, its class renamed. ``MIRROR`` holds the same squares at the top, where
    each is read afresh, so its snapshots name the identities and types the row must name. The
    row holds a `None` too (an immortal kept by its address), later a square, and a square
    becomes `None`."""
    squares = [_Square(i) for i in range(5)] + [None]
    board = _Board(list(squares))
    mirror = list(squares)
    top = [board, mirror]
    spare, spare_too = _Square(9), _Square(10)
    made_at_address = []

    def replace_item():
        board.squares[0] = mirror[0] = spare

    def new_square_at_its_address():
        old = id(board.squares[2])
        board.squares[2] = mirror[2] = squares[2] = None
        made = []
        x = _Square(20)
        while id(x) != old and len(made) < 100_000:
            made.append(x)
            x = _Square(20)
        made_at_address.append(id(x) == old)
        board.squares[2] = mirror[2] = x

    def fill_the_none():
        board.squares[5] = mirror[5] = spare_too

    def empty_a_square():
        board.squares[1] = mirror[1] = None

    def change_class():
        board.squares[3].__class__ = _OtherSquare

    def rename_class():
        _Square.__qualname__ = "_RenamedSquare"

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("again", lambda: None),
        ("item replaced", replace_item),
        ("again", lambda: None),
        ("again", lambda: None),
        ("new square at its address", new_square_at_its_address),
        ("again", lambda: None),
        ("none filled", fill_the_none),
        ("again", lambda: None),
        ("square emptied", empty_a_square),
        ("again", lambda: None),
        ("class changed", change_class),
        ("again", lambda: None),
        ("class renamed", rename_class),
        ("again", lambda: None),
    ]
    seen = []

    def step(change):
        def run():
            change()
            seen.append([type(x).__qualname__ for x in board.squares])

        return run

    try:
        got = _record_keeps(top, [(tag, step(c)) for tag, c in changes])
    finally:
        _Square.__qualname__ = "_Square"
    assert made_at_address == [True]
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), types_then in zip(got, seen):
        if isinstance(v, values.Earlier):
            v = v.value
        shown_board, shown_mirror = v
        row = list(shown_board.squares)
        # Truth as the value's: an earlier state of an object is true (it has no length).
        assert all(row[i] for i in range(len(row)) if types_then[i] != "NoneType"), tag
        assert [x and x.obj_id for x in row] == [x and x.obj_id for x in shown_mirror], tag
        assert all(x is None or x.obj_id for x in row), tag
        assert [x.type_name.rsplit(".", 1)[-1] if x is not None else "NoneType" for x in row] == types_then, tag


class _Rows:
    def __init__(self, rows):
        self.rows = rows


def test_runs_of_opaque_objects_recorded_again_show_each_change():
    """A list of C objects without an identity (``array.array``: shown by type alone) is
    fingerprinted as one group and the count of the items of that type after it
    (``TAG_OPAQUE_RUN``, ``encode/fingerprint.rs``): a record after an item is replaced by an
    object of another type, the list shortened or grown, shows it."""
    import array
    import itertools

    holder = _Rows([array.array("d", [0.0]) * 3 for _ in range(20)])
    seen = []

    def step(change):
        def run():
            change()
            seen.append([type(x).__name__ for x in holder.rows])

        return run

    changes = [
        ("start", lambda: None),
        ("again", lambda: None),
        ("again", lambda: None),
        ("item of another type", lambda: holder.rows.__setitem__(7, itertools.count())),
        ("again", lambda: None),
        ("back to an array", lambda: holder.rows.__setitem__(7, array.array("d"))),
        ("again", lambda: None),
        ("shortened", lambda: holder.rows.pop()),
        ("again", lambda: None),
        ("grown", lambda: holder.rows.append(array.array("b"))),
        ("again", lambda: None),
        ("last of another type", lambda: holder.rows.__setitem__(-1, itertools.count())),
        ("again", lambda: None),
    ]
    got = _record_keeps([holder], [(tag, step(c)) for tag, c in changes])
    assert [tag for tag, _ in got] == [tag for tag, _ in changes]
    for (tag, v), expected in zip(got, seen):
        if isinstance(v, values.Earlier):
            v = v.value
        assert [repr(x).strip("<>") for x in v[0].rows] == expected, tag
