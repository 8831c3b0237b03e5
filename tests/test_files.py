"""Recordings that outlive the process: the same queries over the live recording and over the
file it was saved to; crashes; `squall info` / `squall export`; bad files."""

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import squall
from squall import api
from squall._instrument import rewrite

SQUALL = str(Path(sys.executable).parent / "squall")

PROGRAM = """
class Oops(Exception):
    pass

def leaf(x, tag):
    if x == 3:
        raise Oops(f"bad {tag}")
    return {"x": x, "tags": [tag, tag.upper()]}

def middle(x):
    return leaf(x, "t%d" % x)

def gen(n):
    for i in range(n):
        got = yield i * 10
    return "done"

def main(items):
    out = []
    for x in items:
        try:
            out.append(middle(x))
        except Oops:
            out.append(None)
    items.append("mutated later")
    g = gen(2)
    out.append(list(g))
    return out
"""


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """Records PROGRAM once, live and saved; yields (live queries, file queries, thread id)."""
    path = tmp_path_factory.mktemp("rec") / "prog.sqrec"
    api.stop_recording()
    api.clear_recordings()
    ns = {"__name__": "prog"}
    exec(rewrite.compile_instrumented(PROGRAM, "/src/prog.py", "prog"), ns)
    api.start_recording(install_hook=False)
    api.save_to(str(path), program="prog.py", argv=["prog.py", "--fast"])
    ns["main"]([1, 2, 3, 4])
    api.stop_recording()
    assert api.finish_saving(exit_code=0) == str(path)
    yield {"live": squall.live(), "file": squall.load(path)}, threading.get_native_id()
    api.clear_recordings()


@pytest.fixture(params=["live", "file"])
def q(request, both):
    backends, tid = both
    return backends[request.param], tid


def test_flows_threads_and_counts(q):
    rec, tid = q
    assert rec.all_flows() == {0: [tid]}
    assert rec.all_threads() == [(0, tid)]
    (info,) = rec.flow_threads_info(0)
    assert (info["thread_name"], info["calls"]) == ("MainThread", 10)
    stats = {s["fn_name"]: s["cnt"] for s in rec.fn_call_stats(0)}
    assert stats == {"main": 1, "middle": 4, "leaf": 4, "gen": 1}


def test_timeline_entries_and_values(q):
    rec, tid = q
    tl = rec.get_referenced_maps_timeline(0, tid)
    assert len(tl) > 20
    main_call = tl[0]
    assert (main_call["type"], main_call["fn_name"], main_call["parent_idx"]) == ("fn-call", "main", None)
    # the list was mutated after the call: the recording shows it as it was passed
    assert rec.deref_val_id(main_call["fn_args_ref"]) == [[1, 2, 3, 4]]
    leaf = rec.find_fn_call_entry(0, tid, fn_name="leaf", args_pred=lambda a: a[0] == 2)
    assert rec.deref_val_id(leaf["fn_args_ref"]) == [2, "t2"]
    assert rec.deref_val_id(tl[leaf["ret_idx"]]["result_ref"]) == {"x": 2, "tags": ["t2", "T2"]}
    assert rec.val_pprint(tl[leaf["ret_idx"]]["result_ref"], print_level=1, print_length=1) == "{'x': 2, ...}"
    assert [e["type"] for e in tl if e["type"].startswith("fn-")][:3] == ["fn-call", "fn-call", "fn-call"]


def test_navigation(q):
    rec, tid = q
    leaf = rec.find_fn_call_entry(0, tid, fn_name="leaf")
    assert rec.timeline_entry(0, tid, leaf["idx"], "next-over")["idx"] == leaf["ret_idx"]
    assert [f["fn_name"] for f in rec.stack_for_frame(0, tid, leaf["idx"])] == ["leaf", "middle", "main"]
    frame = rec.frame_data(0, tid, leaf["idx"])
    assert frame["arg_names"] == ["x", "tag"] and frame["exit_type"] == "fn-return"
    root = rec.callstack_root_node(0, tid)
    (main,) = rec.callstack_node_childs(root)
    kids = rec.callstack_node_childs(main)
    assert [k["fn_name"] for k in kids] == ["middle"] * 4 + ["gen", "gen", "gen"]
    assert [k["type"] for k in kids[-3:]] == ["fn-call", "fn-resume", "fn-resume"]
    last = rec.find_fn_call_entry(0, tid, fn_name="middle", backward=True)
    assert rec.deref_val_id(last["fn_args_ref"]) == [4]


def test_exceptions(q):
    rec, tid = q
    (exc,) = rec.exceptions()
    # Named as Python's traceback names it: the module `prog` is not __main__.
    assert (exc["fn_name"], exc["exc_type"], exc["message"], exc["frames"], exc["caught_in"]) == (
        "leaf",
        "prog.Oops",
        "bad t3",
        2,
        "prog.main",
    )
    assert exc["text"] == rec.exception_text(exc["throwable_ref"]) == "prog.Oops: bad t3"
    assert exc["obj_id"] == rec.deref_val_id(exc["throwable_ref"]).obj_id != 0
    # The chain from its innermost unwind is the query's; from the next frame, the rest of it.
    chain = rec.unwind_chain(0, tid, exc["idx"])
    assert [(call, unwind) for call, unwind, _ in chain] == [tuple(c) for c in exc["chain"]]
    assert chain[0][2] == exc["raised_idx"]
    assert rec.unwind_chain(0, tid, exc["chain"][1][1]) == chain[1:]
    with pytest.raises(ValueError, match="is not an fn-unwind"):
        rec.unwind_chain(0, tid, exc["fn_call_idx"])
    assert str(rec.deref_val_id(exc["throwable_ref"])) == "bad t3"


def test_generator_segments(q):
    rec, tid = q
    tl = rec.get_referenced_maps_timeline(0, tid)
    gen_exits = [
        e
        for e in tl
        if e["type"] == "fn-return" and rec.get_referenced_maps_timeline(0, tid)[e["fn_call_idx"]]["fn_name"] == "gen"
    ]
    assert [e["kind"] for e in gen_exits] == ["yield", "yield", "return"]
    assert [rec.deref_val_id(e["result_ref"]) for e in gen_exits] == [0, 10, "done"]


def test_file_info(both, tmp_path):
    backends, _ = both
    info = backends["file"].info()
    assert info["program"] == "prog.py" and info["argv"] == ["prog.py", "--fast"]
    assert info["completed"] and info["cut_short"] is None
    assert info["stats"]["exit_code"] == 0
    assert info["python"].startswith(sys.version.split()[0])


# --- the command line ------------------------------------------------------------------------


def squall_cmd(*args, cwd, timeout=60):
    return subprocess.run([SQUALL, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_run_saves_info_and_exports(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM + "\nmain([1, 2, 3, 4])\nprint('ok')\n")
    run = squall_cmd("run", "-o", "out.sqrec", str(script), cwd=tmp_path)
    assert run.returncode == 0 and run.stdout == "ok\n"
    assert f"recording saved to {tmp_path / 'out.sqrec'}" in run.stderr
    info = squall_cmd("info", "out.sqrec", cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    lines = info.stdout.splitlines()
    assert lines[1] == f"program    {script}"
    assert lines[2] == f"argv       {script}"
    assert "status     completed (exit code 0)" in lines
    assert any(ln.strip().startswith("thread") and "MainThread" in ln for ln in lines)
    as_json = json.loads(squall_cmd("info", "--json", "out.sqrec", cwd=tmp_path).stdout)
    assert as_json["completed"] is True and as_json["entries"] > 20

    chrome = squall_cmd("export", "out.sqrec", "--format", "chrome", cwd=tmp_path)
    assert chrome.returncode == 0 and chrome.stdout.strip() == str(tmp_path / "out.json")
    trace = json.loads((tmp_path / "out.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = [e["name"] for e in events if e.get("ph") == "X"]
    assert names.count("__main__.middle") == 4

    db = squall_cmd("export", "out.sqrec", "--format", "sqlite", "-o", "out.db", cwd=tmp_path)
    assert db.returncode == 0, db.stderr
    con = sqlite3.connect(tmp_path / "out.db")
    rows = dict(con.execute("select fn_name, count(*) from calls group by fn_name").fetchall())
    assert rows == {"main": 1, "middle": 4, "leaf": 4, "gen": 3}


def test_default_recording_path_is_printed(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("def hi():\n    return 1\nhi()\n")
    run = squall_cmd("run", str(script), cwd=tmp_path)
    saved = [ln for ln in run.stderr.splitlines() if ln.startswith("recording saved to ")]
    assert len(saved) == 1
    path = Path(saved[0].split("recording saved to ", 1)[1])
    assert path.parent == tmp_path / ".squall" and path.name.startswith("hello-") and path.exists()
    assert squall.load(path).fn_call_stats(0)[0]["fn_name"] == "hi"


CRASHER = """
import os, signal, sys, time

def work(i):
    return i * 2

for i in range(500):
    work(i)
print("ready", flush=True)
time.sleep(1.5)  # longer than a flush interval
mode = sys.argv[1]
if mode == "os_exit":
    os._exit(3)
elif mode == "segfault":
    import ctypes
    ctypes.string_at(0)
elif mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "ctrl_c":
    time.sleep(60)
work(-1)
"""


@pytest.mark.parametrize("mode", ["os_exit", "segfault", "sigkill", "ctrl_c"])
def test_a_crashed_program_leaves_a_readable_file(tmp_path, mode):
    script = tmp_path / "crash.py"
    script.write_text(CRASHER)
    proc = subprocess.Popen(
        [SQUALL, "run", "-o", "crash.sqrec", str(script), mode],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "ready\n"
    if mode == "ctrl_c":
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    if mode == "ctrl_c":
        rec = squall.load(tmp_path / "crash.sqrec")
    else:
        with pytest.warns(squall.indexes.SquallWarning, match="is cut short .*: no end marker"):
            rec = squall.load(tmp_path / "crash.sqrec")
    info = rec.info()
    stats = {s["fn_name"]: s["cnt"] for s in rec.fn_call_stats(0)}
    assert stats["work"] == 500  # everything up to the last flush
    if mode == "ctrl_c":
        assert info["completed"] and info["stats"]["interrupted"] == 1
        shown = squall_cmd("info", "crash.sqrec", cwd=tmp_path).stdout
        assert "interrupted: Ctrl-C" in shown
    else:
        assert not info["completed"]
        assert "no end marker" in info["cut_short"]
        shown = squall_cmd("info", "crash.sqrec", cwd=tmp_path).stdout
        assert "CUT SHORT" in shown


# --- bad files -------------------------------------------------------------------------------


def test_bad_files_get_clear_errors(tmp_path, both):
    backends, _ = both
    good = Path(backends["file"].path).read_bytes()
    (tmp_path / "notes.txt").write_text("just some text\n")
    (tmp_path / "empty.sqrec").write_bytes(b"")
    (tmp_path / "half.sqrec").write_bytes(good[: len(good) // 2])
    with pytest.raises(FileNotFoundError, match="no recording at `.*missing.sqrec`"):
        squall.load(tmp_path / "missing.sqrec")
    with pytest.raises(ValueError, match="is not a squall recording"):
        squall.load(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="is empty"):
        squall.load(tmp_path / "empty.sqrec")
    with pytest.warns(
        squall.indexes.SquallWarning, match=r"half.sqrec` is cut short \(\d+ bytes\): truncated chunk at byte"
    ):
        half = squall.load(tmp_path / "half.sqrec")
    assert not half.info()["completed"] and half.info()["cut_short"]
    cmd = squall_cmd("info", "notes.txt", cwd=tmp_path)
    assert cmd.returncode == 1 and cmd.stdout == "" and "is not a squall recording" in cmd.stderr


def test_a_saved_recording_holds_none_of_the_programs_objects(tmp_path):
    import weakref

    class Payload:
        def __init__(self, n):
            self.n = n

    api.stop_recording()
    api.clear_recordings()
    ns = {"__name__": "keep"}
    exec(rewrite.compile_instrumented("def take(p):\n    return p.n\n", "/src/keep.py", "keep"), ns)
    try:
        api.start_recording(install_hook=False)
        api.save_to(str(tmp_path / "keep.sqrec"))
        first = Payload(0)
        ns["take"](first)
        watch = weakref.ref(first)
        del first
        assert watch() is None  # freed at once, no collection needed: nothing holds it
        for i in range(1, 50):
            ns["take"](Payload(i))
        api.stop_recording()
        api.finish_saving()
        for rec in (squall.indexes, squall.load(tmp_path / "keep.sqrec")):
            tl = rec.get_referenced_maps_timeline(0, threading.get_native_id())
            calls = [e for e in tl if e["type"] == "fn-call"]
            deref = squall.values.deref_val_id if rec is squall.indexes else rec.deref_val_id
            args = [deref(c["fn_args_ref"])[0] for c in calls]
            assert [a.n for a in args] == list(range(50))
            assert all(isinstance(a, squall.values.ObjectSnapshot) for a in args)
    finally:
        api.clear_recordings()


def test_bookmarks_from_code_are_recorded_and_saved(tmp_path):
    api.stop_recording()
    api.clear_recordings()
    ns = {"__name__": "bm"}
    exec(rewrite.compile_instrumented("def step(i):\n    return i\n", "/src/bm.py", "bm"), ns)
    api.start_recording(install_hook=False)
    api.save_to(str(tmp_path / "bm.sqrec"))
    ns["step"](1)
    squall.bookmark("after the first step")
    ns["step"](2)
    api.stop_recording()
    api.finish_saving()
    live = squall.bookmarks()
    assert [(b["idx"], b["note"]) for b in live] == [(2, "after the first step")]
    saved = squall.bookmarks(squall.load(tmp_path / "bm.sqrec"))
    assert [(b["idx"], b["note"]) for b in saved] == [(2, "after the first step")]
    api.stop_recording()
    squall.bookmark("ignored while recording is off")  # never raises
    api.clear_recordings()


def test_a_long_run_saved_to_a_file_stays_within_the_memory_limit(tmp_path):
    # Saved entries leave memory past half the limit; the recording goes on in the file. The
    # limit counts the writer's buffers too (a pass and its chunks: about 17 MiB here).
    import time as _time

    api.stop_recording()
    api.clear_recordings()
    ns = {"__name__": "long"}
    exec(rewrite.compile_instrumented("def tick(i):\n    return i\n", "/src/long.py", "long"), ns)
    limits = api.get_limits()
    limit = 24 << 20
    api.set_limits(memory_limit=limit)
    try:
        api.start_recording(install_hook=False)
        api.save_to(str(tmp_path / "long.sqrec"))
        peak = 0
        for _batch in range(12):
            for i in range(2000):
                ns["tick"](i)
            stats = api.engine_stats()
            peak = max(peak, stats["bytes"])
            assert stats["writer_bytes"] > limit // 2  # so the saved entries leave memory
            _time.sleep(0.15)  # the flusher runs twice a second
        assert api.is_recording()  # not stopped by the limit
        api.stop_recording()
        api.finish_saving()
        assert api.engine_stats()["writer_bytes"] == 0  # the writer is gone
        assert peak < limit, peak
        tid = threading.get_native_id()
        live_stats = squall.indexes.fn_call_stats(0)
        assert live_stats[0]["cnt"] == 24_000  # evicted calls still counted
        with pytest.raises(ValueError, match="moved out of memory into the recording file"):
            squall.indexes.timeline_entry(0, tid, 0, "at")
        rec = squall.load(tmp_path / "long.sqrec")
        assert rec.fn_call_stats(0)[0]["cnt"] == 24_000  # the file has everything
        tl = rec.get_referenced_maps_timeline(0, tid)
        assert len(tl) == 48_000 and tl[0]["type"] == "fn-call" and tl[1]["fn_call_idx"] == 0
    finally:
        api.set_limits(**limits)
        api.clear_recordings()


def test_saved_entries_leave_memory_past_the_window_and_exceptions_stay_whole(tmp_path):
    # With a memory window (`squall run` without -i), saved entries leave memory long before
    # half the limit, and saved value nodes with them; call counts and the exceptions live
    # queries list stay whole, the same as the file's, a chain raised before the eviction point
    # included, with its text (its value's node left memory: its text was kept).
    import time as _time

    api.stop_recording()
    api.clear_recordings()
    ns = {"__name__": "win"}
    src = (
        "def tick(i):\n    return [i]\n"
        "def inner():\n    raise KeyError('early')\n"
        "def outer():\n    return inner()\n"
        "def catcher():\n    try:\n        outer()\n    except KeyError:\n        return 1\n"
        "def late():\n    raise ValueError('late')\n"
    )
    exec(rewrite.compile_instrumented(src, "/src/win.py", "win"), ns)
    try:
        api.start_recording(install_hook=False)
        api.save_to(str(tmp_path / "win.sqrec"), memory_window=64 << 10)
        ns["catcher"]()
        for _batch in range(8):
            for i in range(3000):
                ns["tick"](i)
            _time.sleep(0.15)  # the flusher runs twice a second
        try:
            ns["late"]()
        except ValueError:
            pass
        api.stop_recording()
        api.finish_saving()
        stats = api.engine_stats()
        assert stats["values_held"] < stats["values"] // 2, stats
        tid = threading.get_native_id()
        with pytest.raises(ValueError, match="moved out of memory into the recording file"):
            squall.indexes.timeline_entry(0, tid, 0, "at")
        live_calls = {s["fn_name"]: s["cnt"] for s in squall.indexes.fn_call_stats(0)}
        assert live_calls["tick"] == 24_000
        live = squall.indexes.exceptions()
        assert [(e["exc_type"], e["fn_name"]) for e in live] == [("KeyError", "inner"), ("ValueError", "late")]
        rec = squall.load(tmp_path / "win.sqrec")
        saved = rec.exceptions()
        assert [(e["exc_type"], e["fn_name"]) for e in saved] == [("KeyError", "inner"), ("ValueError", "late")]
        assert (live[0]["caught_in"], len(live[0]["chain"])) == ("win.catcher", 2)  # inner, then outer
        keys = ("idx", "caught", "caught_in", "caught_in_idx", "chain", "raised_idx", "text", "obj_id")
        assert [{k: e.get(k) for k in keys} for e in live] == [{k: e.get(k) for k in keys} for e in saved]
        assert [e["text"] for e in live] == ["KeyError: 'early'", "ValueError: late"]
    finally:
        api.clear_recordings()


def test_squall_run_keeps_a_memory_window_unless_interactive():
    # The window is for runs nobody queries live afterwards but through the summary.
    from types import SimpleNamespace

    from squall.cli import lifecycle

    class FakeApi:
        def save_to(self, path, program=None, argv=None, memory_window=None):
            self.window = memory_window

    for command, interactive, window in [
        ("run", False, lifecycle.MEMORY_WINDOW),
        ("run", True, None),
        ("repl", False, None),
    ]:
        fake = FakeApi()
        opts = SimpleNamespace(command=command, interactive=interactive, output="/tmp/x.sqrec")
        lifecycle._start_saving(fake, opts, "prog.py", ["prog.py"])
        assert fake.window == window, (command, interactive)


def test_saved_values_leave_memory_and_the_recording_goes_on_past_the_limit(tmp_path):
    # Many distinct big values recorded while saving: past half the limit saved value nodes
    # leave memory with their entries, so the recording goes on within the limit (before, value
    # stores never left and it stopped at the limit), and the file holds every value. An object
    # recorded unchanged and a list appended to are recorded again after their earlier nodes
    # left memory: encoded afresh, right in the file.
    import time as _time

    api.stop_recording()
    api.clear_recordings()
    ns = {"__name__": "big"}
    exec(rewrite.compile_instrumented("def take(xs, keep, log):\n    return 1\n", "/src/big.py", "big"), ns)

    class Keep:
        def __init__(self):
            self.name = "kept"
            self.n = 12345

    keep, log = Keep(), []
    limits = api.get_limits()
    limit = 24 << 20  # the writer's buffers (about 17 MiB) are counted: 7 MiB of values
    api.set_limits(memory_limit=limit)
    try:
        api.start_recording(install_hook=False)
        api.save_to(str(tmp_path / "big.sqrec"))
        peak = 0
        for batch in range(40):
            for i in range(100):
                log.append(batch * 100 + i)
                ns["take"]([[batch, i, j] for j in range(100)], keep, log)  # a new value each time
            _time.sleep(0.05)
            stats = api.engine_stats()
            peak = max(peak, stats["bytes"])
        evicted = stats["values"] - stats["values_held"]
        assert api.is_recording()  # not stopped by the limit
        assert evicted > 0, "saved value nodes left memory"
        api.stop_recording()
        api.finish_saving()
        assert peak < limit * 1.1, peak
        rec = squall.load(tmp_path / "big.sqrec")
        assert rec.fn_call_stats(0)[0]["cnt"] == 4000  # every call recorded
        calls = [e for e in rec.get_referenced_maps_timeline(0, threading.get_native_id()) if e["type"] == "fn-call"]
        for n in range(0, 4000, 97):
            xs, kept, logged = rec.deref_val_id(calls[n]["fn_args_ref"])
            assert xs[5] == [n // 100, n % 100, 5]
            assert (kept.name, kept.n) == ("kept", 12345)
            length = logged[-1].length if isinstance(logged[-1], squall.values.Truncated) else len(logged)
            assert length == n + 1 and logged[:3] == [0, 1, 2][: n + 1]
    finally:
        api.set_limits(**limits)
        api.clear_recordings()


def test_a_repr_that_changes_what_is_being_saved_does_not_stop_the_saving(tmp_path):
    # Saving snapshots an object's attributes and runs their reprs; a repr that adds an
    # attribute to the object being saved made the flusher panic ("dictionary changed size
    # during iteration"), after which nothing more was saved and memory grew unbounded.
    class Sneaky:
        def __init__(self, owner):
            self.owner = owner

        def __repr__(self):
            self.owner.extra = getattr(self.owner, "extra", 0) + 1
            return "Sneaky()"

    class Owner:
        pass

    api.stop_recording()
    api.clear_recordings()
    ns = {"__name__": "sneaky"}
    exec(rewrite.compile_instrumented("def take(o):\n    return 1\n", "/src/sneaky.py", "sneaky"), ns)
    path = tmp_path / "sneaky.sqrec"
    api.start_recording(install_hook=False)
    api.save_to(str(path))
    try:
        owner = Owner()
        owner.a = Sneaky(owner)
        owner.b = 2
        ns["take"](owner)
        squall._engine.flush_sink()
        for i in range(3):
            ns["take"](i)
        api.stop_recording()
        assert api.finish_saving() == str(path)
    finally:
        api.stop_recording()
        api.clear_recordings()
    rec = squall.load(path)
    tl = rec.get_referenced_maps_timeline(0, threading.get_native_id())
    calls = [e for e in tl if e["type"] == "fn-call"]
    assert len(calls) == 4
    (saved,) = rec.deref_val_id(calls[0]["fn_args_ref"])
    assert saved.attrs["b"] == 2
