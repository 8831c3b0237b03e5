"""The recorder inside one process: values, snapshots, limits, threads, queries, bad input.

Code under test is instrumented with the rewriter and executed here; recording is started
without the import hook so pytest's own imports stay untouched.
"""

import sys
import threading
import warnings

import pytest
import squall
from squall import _engine, api, indexes, values
from squall._instrument import rewrite


@pytest.fixture
def rec():
    """Instruments a source snippet as module `snippet`, records while the test runs."""
    api.clear_recordings()
    api.set_flow(0)
    limits = api.get_limits()

    def load(source: str) -> dict:
        ns = {"__name__": "snippet"}
        exec(rewrite.compile_instrumented(source, "<snippet>", "snippet"), ns)
        return ns

    api.start_recording(install_hook=False)
    yield load
    api.stop_recording()
    api.set_limits(**limits)
    api.clear_recordings()


def main_timeline():
    return indexes.get_referenced_maps_timeline(0, threading.get_native_id())


def calls_of(name):
    return [e for e in main_timeline() if e["type"] == "fn-call" and e["fn_name"] == name]


def test_a_list_mutated_after_the_call_shows_its_old_contents(rec):
    ns = rec("def take(xs, d):\n    return len(xs)\n")
    xs = [1, 2, 3]
    d = {"k": [1]}
    ns["take"](xs, d)
    xs.append(4)
    d["k"].append(2)
    d["new"] = 0
    (call,) = calls_of("take")
    assert values.deref_val_id(call["fn_args_ref"]) == [[1, 2, 3], {"k": [1]}]


def test_tuples_and_strings_are_encoded_as_they_were(rec):
    ns = rec("def take(t, s, long):\n    return t\n")
    inner = [1]
    ns["take"]((inner, 2), "x" * 1000, "y" * 5000)
    inner.append(2)
    (call,) = calls_of("take")
    t, s, long = values.deref_val_id(call["fn_args_ref"])
    assert t == ([1], 2)
    assert s == "x" * 1000
    # past the string budget: the first characters, and the length it had
    assert isinstance(long, values.CutStr) and long == "y" * 1000 and long.length == 5000


def test_snapshots_are_bounded_and_marked(rec):
    ns = rec("def take(xs):\n    return None\n")
    values.set_snapshot_budget(max_depth=2, max_length=3, max_items=100)
    try:
        ns["take"]([[[1]], 2, 3, 4, 5])
    finally:
        values.set_snapshot_budget()
    (call,) = calls_of("take")
    (snap,) = values.deref_val_id(call["fn_args_ref"])
    assert len(snap) == 4 and snap[1:3] == [2, 3]
    assert isinstance(snap[0][0], values.Truncated)  # depth cut
    assert isinstance(snap[3], values.Truncated) and snap[3].omitted == 2  # length cut
    assert "2 more of list[5]" in repr(snap[3])


def test_registered_snapshot_functions_capture_user_objects(rec):
    ns = rec("def take(acc):\n    return acc\n")

    class Account:
        def __init__(self):
            self.balance = 10

    values.register_snapshot(Account, lambda a: {"balance": a.balance})
    acc = Account()
    ns["take"](acc)
    acc.balance = 99
    (call,) = calls_of("take")
    assert values.deref_val_id(call["fn_args_ref"]) == [{"balance": 10}]


def test_a_repr_or_eq_that_raises_never_reaches_the_program(rec):
    ns = rec("def ident(x):\n    return x\n")

    class Nasty:
        def __repr__(self):
            raise RuntimeError("no repr for you")

        def __eq__(self, other):
            raise RuntimeError("no eq either")

        __hash__ = object.__hash__

    n = Nasty()
    assert ns["ident"](n) is n
    (call,) = calls_of("ident")
    ret = main_timeline()[call["ret_idx"]]
    snap = values.deref_val_id(ret["result_ref"])
    # squall's own encoding of it: the program's __repr__ and __eq__ are never called
    assert isinstance(snap, values.ObjectSnapshot) and snap.type_name.endswith("Nasty")
    printed = values.val_pprint(ret["result_ref"])
    assert printed == f"<Nasty#{snap.obj_id}>"
    assert values.val_pprint(call["fn_args_ref"]) == f"[<Nasty#{snap.obj_id}>]"


def test_small_ints_none_and_bools_round_trip_inline(rec):
    ns = rec("def ident(x):\n    return x\n")
    samples = [0, -1, 2**30 - 1, -(2**30), 2**30, 2**70, None, True, False, 1.5, "s"]
    for v in samples:
        ns["ident"](v)
    rets = [e for e in main_timeline() if e["type"] == "fn-return"]
    got = [values.deref_val_id(r["result_ref"]) for r in rets]
    assert got == samples
    assert [type(g) for g in got] == [type(s) for s in samples]


def test_val_pprint_respects_print_level_and_length(rec):
    ns = rec("def ident(x):\n    return x\n")
    ns["ident"]({"a": [1, [2, [3, [4]]]], "b": list(range(20))})
    (ret,) = [e for e in main_timeline() if e["type"] == "fn-return"]
    assert values.val_pprint(ret["result_ref"], print_level=2, print_length=3) == (
        "{'a': [1, [...]], 'b': [0, 1, 2, ...]}"
    )
    assert values.val_pprint(ret["result_ref"], print_length=1) == "{'a': [1, ...], ...}"


def test_threads_get_their_own_timelines_with_names(rec):
    ns = rec("def work(n):\n    return n * 2\n")
    threads = [threading.Thread(target=ns["work"], args=(i,), name=f"worker-{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    infos = {i["thread_name"]: i for i in indexes.flow_threads_info(0)}
    assert set(infos) == {"worker-0", "worker-1"}
    for i, t in enumerate(threads):
        tl = indexes.get_referenced_maps_timeline(0, t.native_id)
        assert [e["type"] for e in tl] == ["fn-call", "fn-return"]
        assert values.deref_val_id(tl[1]["result_ref"]) == i * 2


def test_flows_separate_recordings(rec):
    ns = rec("def f():\n    return 1\n")
    ns["f"]()
    with squall.flow(3):
        ns["f"]()
        ns["f"]()
    ns["f"]()
    tid = threading.get_native_id()
    assert indexes.all_flows() == {0: [tid], 3: [tid]}
    assert indexes.fn_call_stats(3)[0]["cnt"] == 2
    assert indexes.fn_call_stats(0)[0]["cnt"] == 2


def test_thread_trace_limit_is_reported_once_and_recording_stops_there(rec, capfd):
    ns = rec("def f(i):\n    return i\n")
    api.set_limits(thread_trace_limit=10)
    for i in range(20):
        assert ns["f"](i) == i
    assert len(main_timeline()) == 10
    err = capfd.readouterr().err
    assert err.count("reached the thread trace limit of 10 entries") == 1
    (hit,) = api.limits_hit()
    assert hit["limit"] == "thread_trace_limit" and hit["value"] == 10
    assert indexes.flow_threads_info(0)[0]["limit_hit"]


def test_fn_call_limit_skips_calls_past_the_limit(rec, capfd):
    ns = rec("def leaf(i):\n    return i\n\ndef outer():\n    return [leaf(i) for i in range(5)]\n")
    api.set_limits(fn_call_limit=3)
    assert ns["outer"]() == [0, 1, 2, 3, 4]
    stats = {s["fn_name"]: s["cnt"] for s in indexes.fn_call_stats(0)}
    assert stats == {"outer": 1, "leaf": 3}
    assert "`snippet.leaf` was called more than 3 times" in capfd.readouterr().err
    assert api.limits_hit()[0]["function"] == "snippet.leaf"


def test_memory_limit_stops_recording_everywhere(rec, capfd):
    ns = rec("def f(i):\n    return i\n")
    api.set_limits(memory_limit=1)
    for i in range(70_000):
        ns["f"](i)
    assert not api.is_recording()
    assert "reached the memory limit" in capfd.readouterr().err
    assert api.limits_hit()[0]["limit"] == "memory_limit"


def test_queries_say_plainly_when_nothing_is_recorded():
    api.stop_recording()
    api.clear_recordings()
    with pytest.warns(indexes.SquallWarning, match="start_recording"):
        assert indexes.all_flows() == {}


def test_bad_query_input_gets_clear_errors(rec):
    ns = rec("def f():\n    return 1\n")
    ns["f"]()
    tid = threading.get_native_id()
    with pytest.raises(KeyError, match="no recording for flow 7"):
        indexes.get_referenced_maps_timeline(7, tid)
    with pytest.raises(ValueError, match="idx 99 is out of range"):
        indexes.timeline_entry(0, tid, 99, "next")
    with pytest.raises(ValueError, match="unknown drift `up`"):
        indexes.timeline_entry(0, tid, 0, "up")
    with pytest.raises(TypeError, match="expects a value ref"):
        values.deref_val_id("12")
    with pytest.raises(KeyError, match="not made by this process"):
        values.deref_val_id(1 << 60)
    with pytest.raises(ValueError, match="positive int or None"):
        api.set_limits(fn_call_limit=-1)


def test_refs_from_cleared_recordings_say_so(rec):
    ns = rec("def f(x):\n    return x\n")
    ns["f"]("v")
    ref = main_timeline()[1]["result_ref"]
    api.clear_recordings()
    with pytest.raises(KeyError, match="cleared"):
        values.deref_val_id(ref)


def test_entry_points_never_raise_on_malformed_calls():
    api.start_recording(install_hook=False)
    try:
        before = api.engine_stats()["dropped"]
        assert _engine.call("not an id", 1) is None
        assert _engine.ret(10**9, "kept") == "kept"
        assert _engine.unwind(-5, ValueError()) is None
        assert _engine.resume(10**12, 4) == 4
        assert _engine.suspend("x", 5) == 5
        assert api.engine_stats()["dropped"] >= before + 4
    finally:
        api.stop_recording()
        api.clear_recordings()


def test_stepping_queries_on_a_real_recording(rec):
    ns = rec(
        "def leaf(x):\n    return x + 1\n\n"
        "def mid(x):\n    return leaf(x) * 2\n\n"
        "def top():\n    a = mid(1)\n    return mid(a)\n"
    )
    assert ns["top"]() == 10
    tid = threading.get_native_id()
    tl = main_timeline()
    names = [(e["type"], e.get("fn_name")) for e in tl]
    assert names[:3] == [("fn-call", "top"), ("fn-call", "mid"), ("fn-call", "leaf")]
    assert indexes.timeline_entry(0, tid, 1, "next-over")["idx"] == tl[1]["ret_idx"]
    # next-out: the caller's next entry after leaf returns (mid's return in calls mode, the
    # recorded `leaf(x)` value in full mode)
    assert indexes.timeline_entry(0, tid, 2, "next-out")["idx"] == tl[2]["ret_idx"] + 1
    stack = indexes.stack_for_frame(0, tid, 3)
    assert [f["fn_name"] for f in stack] == ["leaf", "mid", "top"]
    frame = indexes.frame_data(0, tid, 3)
    assert frame["fn_name"] == "leaf" and frame["arg_names"] == ["x"]
    assert values.deref_val_id(frame["args_ref"]) == [1] and values.deref_val_id(frame["result_ref"]) == 2
    root = indexes.callstack_root_node(0, tid)
    (top,) = indexes.callstack_node_childs(root)
    assert [c["fn_name"] for c in indexes.callstack_node_childs(top)] == ["mid", "mid"]
    assert [c["fn_name"] for c in indexes.callstack_node_childs(top, offset=1, limit=1)] == ["mid"]
    second = indexes.find_fn_call_entry(0, fn_name="mid", args_pred=lambda args: args[0] == 4)
    assert second is not None and values.deref_val_id(second["fn_args_ref"]) == [4]
    last_mid = indexes.find_fn_call_entry(0, tid, fn_ns="snippet", fn_name="mid", backward=True)
    assert last_mid["idx"] == second["idx"]
    assert indexes.find_fn_call_entry(0, tid, fn_name="mid", from_idx=second["idx"] + 1) is None
    assert indexes.find_fn_call_entry(0, tid, fn_name="nope") is None


def test_exceptions_lists_each_exception_once_with_where_it_was_caught(rec):
    ns = rec(
        "def inner():\n    raise KeyError('k')\n\n"
        "def middle():\n    return inner()\n\n"
        "def outer():\n    try:\n        middle()\n    except KeyError:\n        return 'handled'\n"
    )
    assert ns["outer"]() == "handled"
    (exc,) = indexes.exceptions()
    assert (exc["fn_name"], exc["exc_type"], exc["frames"], exc["caught_in"]) == (
        "inner",
        "KeyError",
        2,
        "snippet.outer",
    )
    # what the recording holds of exceptions and strings stays small
    assert 0 < api.engine_stats()["value_bytes"] < 10_000


def test_warnings_are_not_raised_while_recording(rec):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ns = rec("def f():\n    return 1\n")
        assert ns["f"]() == 1
        assert indexes.all_flows()


def test_memory_limit_counts_the_values_the_recording_keeps(rec, capfd):
    # Few entries, big values: the limit must still stop it (it once counted entries only).
    ns = rec("def take(xs):\n    return len(xs)\n")
    api.set_limits(memory_limit=2_000_000)
    big = list(range(1000))
    for i in range(20_000):
        big.reverse()  # every item changed each time: a new full state to keep
        big[0] = i
        ns["take"](big)
        if not api.is_recording():
            break
    assert not api.is_recording()
    assert api.engine_stats()["entries"] < 10_000
    assert "reached the memory limit" in capfd.readouterr().err


def test_a_list_changed_a_little_stores_its_changes(rec):
    # A list of 1,000 items appended to or changed in one place at each record: its states are
    # kept as changes against an earlier full state, not 2,000 copies (a copy is 4 KB of refs).
    ns = rec("def take(xs):\n    return len(xs)\n")
    big = list(range(100_000, 101_000))
    ns["take"](big)
    before = api.engine_stats()["value_bytes"]
    for i in range(2_000):
        big[i % 50] = -i
        ns["take"](big)
    grown = api.engine_stats()["value_bytes"] - before
    assert grown < 2_000 * 400, grown
    first, last = [values.deref_val_id(e["fn_args_ref"])[0] for e in calls_of("take")[::2_000]]
    assert first[:3] == [100_000, 100_001, 100_002] and len(first) == 101  # budget: 100 items + marker
    assert last[:2] == [-1950, -1951] and last[49] == -1999 and last[50] == 100_050


def test_an_unchanged_value_recorded_again_is_shared(rec):
    ns = rec("def take(xs):\n    return None\n")
    big = [list(range(50)) for _ in range(10)]
    ns["take"](big)
    once = api.engine_stats()["value_bytes"]
    for _ in range(1000):
        ns["take"](big)
    assert api.engine_stats()["value_bytes"] - once < 1000
    big[3].append(-1)  # one inner list changed: the others' encodings are shared
    ns["take"](big)
    calls = calls_of("take")
    first, last = (values.deref_val_id(c["fn_args_ref"])[0] for c in (calls[0], calls[-1]))
    assert first[3] == list(range(50)) and last[3] == list(range(50)) + [-1]
    assert api.engine_stats()["value_bytes"] - once < 2000


def test_total_order_interleaves_threads_as_they_ran(rec):
    ns = rec("def work(tag, i):\n    return i\n")
    import threading as th

    go = [th.Event(), th.Event()]

    def worker():
        go[0].wait()
        ns["work"]("w", 1)
        go[1].set()

    t = th.Thread(target=worker, name="w")
    t.start()
    ns["work"]("m", 0)
    go[0].set()
    go[1].wait()
    ns["work"]("m", 2)
    t.join()
    order = [(e["thread_name"], e["type"]) for e in indexes.total_order_timeline(0)]
    assert order == [
        ("MainThread", "fn-call"),
        ("MainThread", "fn-return"),
        ("w", "fn-call"),
        ("w", "fn-return"),
        ("MainThread", "fn-call"),
        ("MainThread", "fn-return"),
    ]
    page = indexes.total_order_timeline(0, start=2, limit=3)
    assert [(e["thread_name"], e["idx"]) for e in page] == [("w", 0), ("w", 1), ("MainThread", 2)]


def test_big_sets_deques_and_subclasses_are_cut_to_the_budget(rec):
    # A 100,000-item deque used to be copied whole at every recording (more-itertools: 4.7 GB).
    import collections

    ns = rec("def take(x):\n    return None\n")
    values.set_snapshot_budget(max_depth=3, max_length=10, max_items=100)
    try:
        big = [
            collections.deque(range(100_000)),
            set(range(5000)),
            collections.OrderedDict((i, i) for i in range(50)),
            collections.deque(range(5)),
        ]
        for x in big:
            ns["take"](x)
    finally:
        values.set_snapshot_budget()
    args = [values.deref_val_id(c["fn_args_ref"])[0] for c in calls_of("take")]
    deque_snap, set_snap, od_snap, small = args
    assert len(deque_snap) == 11 and deque_snap[:3] == [0, 1, 2] and deque_snap[-1].omitted == 99_990
    assert len(set_snap) == 11 and isinstance(set_snap[-1], values.Truncated)
    assert len(od_snap) == 11 and any(isinstance(k, values.Truncated) for k in od_snap)
    assert small == [0, 1, 2, 3, 4] and small.type_name == "collections.deque"
    assert api.engine_stats()["value_bytes"] < 100_000


def test_classes_are_recorded_without_keeping_them_alive(rec):
    import gc

    ns = rec("def take(cls):\n    return cls.__name__\n")

    class Temp:
        pass

    import weakref

    ns["take"](Temp)
    alive = weakref.ref(Temp)
    (call,) = calls_of("take")
    (shown,) = values.deref_val_id(call["fn_args_ref"])  # by name: the recording holds no class
    assert isinstance(shown, values.ObjectSnapshot) and shown.type_name == "type"
    assert repr(shown).endswith("Temp'>") and "<locals>" in repr(shown)
    del Temp
    gc.collect()
    assert alive() is None
    assert repr(values.deref_val_id(call["fn_args_ref"])[0]) == repr(shown)


def test_a_class_renamed_between_calls_is_recorded_by_its_new_name(rec):
    # The encoder caches heap types' names by address and tp_version_tag: a rename must show.
    ns = rec("def ident(x):\n    return x\n")

    class Old:
        pass

    o = Old()
    o.a = 1
    ns["ident"](o)
    Old.__qualname__ = "Renamed"
    Old.__module__ = "elsewhere"
    ns["ident"](o)
    first, second = calls_of("ident")
    assert values.deref_val_id(first["fn_args_ref"])[0].type_name.endswith("Old")
    assert values.deref_val_id(second["fn_args_ref"])[0].type_name == "elsewhere.Renamed"


def test_a_big_container_of_a_renamed_class_is_recorded_by_its_new_name(rec):
    # A big container recorded again unchanged reuses its node by its fingerprint
    # (encode/fingerprint.rs): the class's name is part of it, not only its address.
    ns = rec("def ident(x):\n    return x\n")

    class Old(list):
        pass

    items = Old(range(20))
    ns["ident"](items)
    Old.__qualname__ = "Renamed"
    Old.__module__ = "elsewhere"
    ns["ident"](items)
    first, second = calls_of("ident")
    assert values.deref_val_id(first["fn_args_ref"])[0].type_name.endswith("Old")
    assert values.deref_val_id(second["fn_args_ref"])[0].type_name == "elsewhere.Renamed"


def test_attribute_names_are_recorded_as_they_are_at_each_call(rec):
    # Attribute names are cached by their str's address, checked against the text.
    ns = rec("def ident(x):\n    return x\n")

    class Thing:
        pass

    names = ["".join(["alpha", str(i)]) for i in range(50)]
    for i, name in enumerate(names):
        t = Thing()
        setattr(t, name, i)
        ns["ident"](t)
        del t
    calls = calls_of("ident")
    assert [getattr(values.deref_val_id(c["fn_args_ref"])[0], n, None) for c, n in zip(calls, names)] == list(range(50))


@pytest.mark.skipif(
    sys.version_info[:2] not in ((3, 11), (3, 12), (3, 13)),
    reason="inline values without a dict until __dict__ is asked for: 3.11 to 3.13",
)
def test_recording_an_object_does_not_make_its_instance_dict(rec):
    # 3.11-3.13 keep a plain object's attributes inline; asking for its dict pointer would make
    # the dict (the program's attribute loads deoptimize, the object grows). gc.get_referents
    # shows the dict if there is one, the attribute values themselves if not.
    import gc

    ns = rec("def ident(x):\n    return x\n")

    class Point:
        def __init__(self):
            self.x = 1.5
            self.y = "why"
            self.z = [1]

    p = Point()
    del p.y
    p.w = 4.5
    ns["ident"](p)
    assert not any(type(r) is dict for r in gc.get_referents(p))
    if sys.version_info[:2] == (3, 13):
        # 3.13's gc shows the inline values while they are valid, even with a dict made: the
        # managed dict pointer, three words before the object, says whether one was.
        import ctypes

        word = ctypes.sizeof(ctypes.c_void_p)
        assert ctypes.c_void_p.from_address(id(p) - 3 * word).value is None
        assert p.__dict__ and ctypes.c_void_p.from_address(id(p) - 3 * word).value is not None
    (call,) = calls_of("ident")
    snap = values.deref_val_id(call["fn_args_ref"])[0]
    assert (snap.x, snap.z, snap.w, hasattr(snap, "y")) == (1.5, [1], 4.5, False)
    assert values.val_pprint(call["fn_args_ref"]).index("x") < values.val_pprint(call["fn_args_ref"]).index("w")
