"""Writes (issue 11 item 4): attribute and item stores, deletes, augmented forms and direct
setattr calls in instrumented code are write entries; the program runs as without squall; the
writes query says where a field changed, from what to what, live and from a file alike."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import squall
from squall._instrument import rewrite
from test_full_mode import run

ROOT = Path(__file__).resolve().parent.parent
SQUALL = str(Path(sys.executable).parent / "squall")


def rewritten(src: str) -> str:
    return rewrite.instrumented_source_text(textwrap.dedent(src), "w.py", "w", mode="full")


def test_each_write_form_goes_through_its_entry_point():
    text = rewritten("""
    def f(o, d, a, k, v):
        o.x = v
        d[k] = v
        o.y = d[k] = v
        del o.x
        del d[k], a[0]
        o.n += 1
        d[k] -= v
        setattr(o, "z", v)
        a[1:2] = [v]
        o.__p = v
        o.m += len(a)
    """)
    # each write entry point is bound to its site (`_sq_wattr_S(v, o, "x")` for `wattr(S, v, o, "x")`)
    assert re.search(r"_sq_wattr_\d+\(v, o, 'x'\)", text)
    assert re.search(r"_sq_witem_\d+\(v, d, k\)", text)
    chained = [line for line in text.splitlines() if "'y'" in line][0]
    assert re.match(r"_sq_witem_\d+\(_sq_wattr_\d+\(", chained.strip())  # left target stored first
    assert re.search(r"_sq_wdelattr_\d+\(o, 'x'\)", text)
    assert re.search(r"_sq_wdelitem_\d+\(d, k\)", text) and text.index("(d, k)\n") < text.index("(a, 0)")
    assert re.search(r"_sq_waugattr_\d+\(o, 'n', 0, 1\)", text)
    assert re.search(r"_sq_waugitem_\d+\(d, k, 1, v\)", text)
    assert re.search(r"_sq_wsetattr_\d+\(o, 'z', v\)", text)
    # left as plain statements: slices, private names (mangled by the compiler)
    assert "a[1:2] = " in text and "o.__p = " in text
    # an augmented operand with effects of its own (Python evaluates it after the load): the
    # target is a write slot, which Python loads and stores in its own order
    assert re.search(r"_sq_wslot_\d+\(o, 'm', False\)\.v \+= ", text)  # bound to its site


def test_module_level_and_class_bodies_are_left_alone():
    text = rewritten("""
    import types
    o = types.SimpleNamespace()
    o.x = 1
    """)
    assert "_sq_w" not in text


def test_setattr_that_is_not_the_builtin_is_a_plain_call():
    text = rewritten("""
    def setattr(o, n, v):
        pass
    def f(o):
        setattr(o, "a", 1)
    """)
    assert "_sq_wsetattr" not in text


BEHAVIOUR = """
log = []

def note(tag, value):
    log.append(tag)
    return value

class Loud:
    def __setattr__(self, name, value):
        log.append(("setattr", name, value))
        object.__setattr__(self, name, value)
    def __setitem__(self, key, value):
        log.append(("setitem", key, value))
    def __delitem__(self, key):
        log.append(("delitem", key))
    def __getitem__(self, key):
        log.append(("getitem", key))
        return 10

class Refuses:
    def __setattr__(self, name, value):
        raise AttributeError(f"read-only: {name}")

class Prop:
    def __init__(self):
        self._p = 0
    @property
    def p(self):
        log.append("get p")
        return self._p
    @p.setter
    def p(self, v):
        log.append(("set p", v))
        self._p = v * 2

def main():
    l, r = Loud(), Refuses()
    note("obj", l).a = note("value", 1)
    note("obj", l)[note("key", "k")] = note("value", 2)
    note("a", l).b = note("b", l)["c"] = note("value", 3)
    l["k"] += 5
    del note("obj", l)[note("key", "k")]
    setattr(note("obj", l), note("name", "c"), note("value", 4))
    p = Prop()
    p.p = 5
    p.p += 1
    errors = []
    try:
        r.x = 1
    except AttributeError as e:
        errors.append(str(e))
    try:
        {}["missing"] += 1
    except KeyError as e:
        errors.append(repr(e))
    try:
        del l.nope
    except AttributeError as e:
        errors.append(type(e).__name__)
    try:
        setattr(l, 3, 4)
    except TypeError as e:
        errors.append(str(e))
    return log, errors, p._p, vars(l)
"""


def test_the_program_runs_as_without_squall(tmp_path):
    # `run` checks the outcome (result or exception, traceback included) equals plain Python's
    got, entries, _ = run(tmp_path, BEHAVIOUR)
    writes = [e for e in entries if e["type"] == "write"]
    # main's 9 successful stores (the chained one is 2) and Prop's 3 (`self._p = ...` in
    # __init__ and twice in the setter, each recorded before the `p.p` store that ran it: a write
    # is recorded once its store returned); none of the refused ones
    assert len(writes) == 12
    assert [w["symbol"] for w in writes if w["symbol"]] == ["a", "b", "_p", "_p", "p", "_p", "p"]


def test_writes_query_live_and_file_say_where_price_changed(tmp_path):
    out = tmp_path / "prices.sqrec"
    program = ROOT / "tests" / "value_programs" / "price_changes.py"
    r = subprocess.run([SQUALL, "run", "-q", "-o", str(out), str(program)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "90"
    f = squall.load(out).writes(type_name="Item", attr_or_key="price")
    rows = [(w["fn"], w["line"], w["old"], w["new"], w["old_from"]) for w in f["writes"]]
    assert rows == [
        ("__main__.Item.__init__", 8, None, 200, "unknown (not recorded before)"),
        ("__main__.apply_discount", 12, 200, 180, "previous write"),
        ("__main__.apply_discount", 12, 180, 90, "previous write"),
    ]
    assert (f["total"], f["left_out"]) == (3, 0)
    # the same program recorded live in this process gives the same answer
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import json, sys
        from squall import cli, indexes
        cli.main(["run", "--no-summary", "-q", "--no-save", {str(program)!r}])
        w = indexes.writes(type_name="Item", attr_or_key="price")
        print(json.dumps([(x["fn"], x["line"], x["old"], x["new"], x["old_from"]) for x in w["writes"]]))
        """),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert code.returncode == 0, code.stderr
    import json

    assert [tuple(x) for x in json.loads(code.stdout.strip().splitlines()[-1])] == rows
    # bounded: a limit says what it left out
    one = squall.load(out).writes(type_name="Item", attr_or_key="price", limit=1)
    assert (one["shown"], one["total"], one["left_out"]) == (1, 3, 2)


def test_cli_writes_query_names_lines_old_and_new(tmp_path):
    out = tmp_path / "prices.sqrec"
    program = ROOT / "tests" / "value_programs" / "price_changes.py"
    subprocess.run([SQUALL, "run", "-q", "-o", str(out), str(program)], check=True, capture_output=True, timeout=120)
    r = subprocess.run(
        [SQUALL, "query", str(out), "writes", "price", "--type", "Item", "--limit", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "3 write(s); showing 2; 1 left out (--limit)"
    assert ".price: unknown (not recorded before) -> 200  in __main__.Item.__init__ at " in lines[1]
    assert lines[2].endswith("price_changes.py:12") and ".price: 200 -> 180  in __main__.apply_discount" in lines[2]
    r = subprocess.run([SQUALL, "query", str(out), "writes"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "writes needs a name, --type or --obj" in r.stderr


def test_a_write_target_whose_death_is_unseen_gets_no_identity(tmp_path):
    # bytearray's deallocator is not hooked (deaths.rs): three bytearrays that take one address
    # in turn must not be one identity; dicts' deaths are seen, each is its own identity.
    program = tmp_path / "reused.py"
    program.write_text(
        textwrap.dedent("""
    def put(b):
        b[0] = 7

    def main():
        for make in (bytearray, dict):
            addrs = set()
            for _ in range(3):
                b = make(4) if make is bytearray else {}
                addrs.add(id(b))
                put(b)
                del b
            print(len(addrs))

    main()
    """)
    )
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import json
        from squall import cli, indexes
        cli.main(["run", "--no-summary", "-q", "--no-save", {str(program)!r}])
        print(json.dumps([w["obj_id"] for w in indexes.writes(attr_or_key=0)["writes"]]))
        """),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert code.returncode == 0, code.stderr
    lines = code.stdout.strip().splitlines()
    assert lines[:2] == ["1", "1"], "CPython did not reuse the addresses here"
    ids = json.loads(lines[-1])
    assert ids[:3] == [0, 0, 0]
    assert len(set(ids[3:])) == 3 and 0 not in ids[3:]


TARGETS = """
log = []

def note(tag, value):
    log.append(tag)
    return value

def short(v):
    return v if isinstance(v, (int, str, type(None))) else type(v).__name__

class Node:
    def __setattr__(self, name, value):
        log.append(("set", name, short(value)))
        object.__setattr__(self, name, value)
    def __getattr__(self, name):
        log.append(("missing", name))
        raise AttributeError(name)

class Items(dict):
    def __setitem__(self, key, value):
        log.append(("setitem", key, short(value)))
        dict.__setitem__(self, key, value)
    def __getitem__(self, key):
        log.append(("getitem", key))
        return dict.__getitem__(self, key)

class Refuses:
    def __setattr__(self, name, value):
        raise AttributeError(f"read-only: {name}")

class CM:
    def __enter__(self):
        log.append("enter")
        return 7
    def __exit__(self, *a):
        log.append("exit")

def main():
    a, b, d = Node(), Node(), Items()
    errors = []
    note("a", a).peer, note("b", b).peer = note("rhs", (b, a))
    d[note("k", "k")], d[note("j", "j")] = note("rhs", [1, 2])
    [note("a", a).x, (note("d", d)["y"], note("b", b).x)] = note("rhs", (1, (2, 3)))
    first, *note("a", a).rest = note("rhs", [1, 2, 3])
    x = a
    x = x.nxt = note("rhs", b)
    note("b", b).v = note("a", a).v = note("rhs", 5)
    for note("a", a).i in note("iter", range(3)):
        log.append(("loop", a.i))
    with note("cm", CM()) as note("a", a).w:
        log.append(("with", a.w))
    a.n = 1
    note("a", a).n += note("operand", 2)
    d[note("k", "k")] *= note("operand", 10)
    try:
        note("a", a).p, note("b", b).p = note("rhs", [1, 2, 3])
    except ValueError as e:
        errors.append(str(e))
    try:
        note("a", a).q, note("r", Refuses()).q, note("b", b).q = 1, 2, 3
    except AttributeError as e:
        errors.append(str(e))
    try:
        note("a", a).missing += note("operand", 1)
    except AttributeError as e:
        errors.append(repr(e))
    return log, errors, sorted((k, short(v)) for k, v in vars(a).items()), sorted(d.items()), first, x is b

def boom():
    a = Node()
    note("a", a).q, note("r", Refuses()).q = 1, 2

def boom_aug():
    a = Node()
    for note("a", a).i in note("iter", [1, 2]):
        note("a", a).i += note("operand", None)
"""


def test_tuple_chained_loop_and_with_targets_are_writes_in_pythons_order(tmp_path):
    """Writes through tuple/list/starred targets, chains mixing names and writes, `for` and
    `with` targets and augmented writes with any operand were plain statements (not recorded).
    They are writes now, and the program does what plain Python does in the same order: the
    right side first, then each target evaluated just before its store, left to right (`run`
    compares the outcome, the log of every evaluation and store included)."""
    text = rewritten("""
    def f(a, b, d, it, cm, g):
        a.peer, b.peer = b, a
        d[1], *d[2] = g()
        x = x.nxt = a
        for a.i in it:
            pass
        with cm as a.w:
            pass
        a.n += g()
    """)
    assert len(re.findall(r"_sq_wslot_\d+\(", text)) == 8 and ".v, " in text
    got, entries, _ = run(tmp_path, TARGETS)
    assert got[0] == "ok"
    log, errors = got[1][0], got[1][1]
    assert log[:4] == ["rhs", "a", ("set", "peer", "Node"), "b"]
    assert errors[0] == "too many values to unpack (expected 2)"
    assert errors[1] == "read-only: q" and errors[2] == "AttributeError('missing')"
    for entry in ("boom", "boom_aug"):  # raised out of the program: the same traceback as plain
        failed, _, _ = run(tmp_path, TARGETS, entry)
        assert failed[0] == "exc" and failed[1] in ("AttributeError", "TypeError"), failed
    writes = [e for e in entries if e["type"] == "write"]
    symbols = [w["symbol"] for w in writes]
    # main's writes (the items', keyed, have no symbol), each recorded once its store returned
    assert symbols == [
        "peer",
        "peer",
        None,
        None,
        "x",
        None,
        "x",
        "rest",
        "nxt",
        "v",
        "v",
        "i",
        "i",
        "i",
        "w",
        "n",
        "n",
        None,
        "q",
    ]


def test_written_fields_of_a_tuple_target_are_in_the_writes_query(tmp_path):
    src = tmp_path / "pair.py"
    src.write_text(
        textwrap.dedent("""
    class Node:
        def __init__(self, name):
            self.name = name
            self.peer = None

    def link(a, b):
        a.peer, b.peer = b, a
        return a

    link(Node("a"), Node("b"))
    """)
    )
    out = tmp_path / "pair.sqrec"
    r = subprocess.run([SQUALL, "run", "-q", "-o", str(out), str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [(w["fn"], w["line"], w["old"]) for w in squall.load(out).writes(attr_or_key="peer")["writes"]]
    assert rows == [
        ("__main__.Node.__init__", 5, None),
        ("__main__.Node.__init__", 5, None),
        ("__main__.link", 8, None),
        ("__main__.link", 8, None),
    ]


def test_write_slots_reused_hold_nothing_and_answer_as_before():
    # Write slots are made and freed per write; freed ones are kept for reuse (write_slot.rs):
    # a reused slot holds no reference to an earlier target, the slot type's own reference count
    # is back where it was, and names other than `v` are looked up as on any object.
    from squall import _engine

    tp = _engine.WriteSlot
    before = sys.getrefcount(tp)

    class Box:
        pass

    targets = [[0.5] * 3 for _ in range(20)]
    boxes = [Box() for _ in range(20)]
    for box in boxes:
        box.n = 1
    del box
    held = [sys.getrefcount(t) for t in targets] + [sys.getrefcount(b) for b in boxes]
    for _ in range(3):
        for t, b in zip(targets, boxes):
            s = _engine.wslot(0, t, 1, True)
            s.v = s.v + 1.0
            s2 = _engine.wslot(0, b, "n", False)
            s2.v = s2.v * 2
            assert type(s) is tp and s.__class__ is tp and not hasattr(s, "w")
            del s, s2
    del t, b
    assert [t[1] for t in targets] == [3.5] * 20 and [b.n for b in boxes] == [8] * 20
    assert [sys.getrefcount(t) for t in targets] + [sys.getrefcount(b) for b in boxes] == held
    assert sys.getrefcount(tp) == before
