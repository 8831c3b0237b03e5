"""A recorded program runs as without squall (issue 11, DESIGN.md "Values"): the recording holds
nothing of the program and runs none of its code.

Each program of ``tests/value_programs/`` is run with plain ``python`` and with
``squall run --mode full -o FILE`` (or recorded in this process) and what the program sees is
compared: when its objects die (``__del__``, ``weakref.finalize``, weak references, before and
after ``gc.collect()``), ``sys.getrefcount``, ``gc.get_referrers``, how often its special methods,
attribute hooks and properties run (also while the recording is saved and queried), and what a
``__repr__`` that raises, sleeps or takes the program's lock does to its output and its time.
"""

from __future__ import annotations

import collections
import gc
import os
import re
import subprocess
import sys
import threading
import time
import types
import weakref
from pathlib import Path
from typing import Dict, List

import pytest
from squall import api, indexes, values
from squall._instrument import rewrite

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "value_programs"
SQUALL = Path(sys.executable).parent / "squall"
PYTHON = sys.executable


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    for k in (
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "SQUALL_INCLUDE",
        "SQUALL_SKIP",
        "SQUALL_SKIP_REGEX",
        "SQUALL_MODE",
        "SPY_LOG",
    ):
        env.pop(k, None)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def run(cmd: List, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd], cwd=str(PROGRAMS), env=_env(**env), capture_output=True, text=True, timeout=timeout
    )


def plain(program: str, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return run([PYTHON, PROGRAMS / program, *args], timeout=timeout, **env)


def recorded(program: str, *args: str, out: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    """``squall run --no-summary --mode full -o out program args``."""
    r = run(
        [SQUALL, "run", "--no-summary", "--mode", "full", "-o", out, PROGRAMS / program, *args], timeout=timeout, **env
    )
    r.stderr = "".join(ln for ln in r.stderr.splitlines(keepends=True) if not ln.startswith("squall: warning: "))
    return r


def assert_same_run(py: subprocess.CompletedProcess, sq: subprocess.CompletedProcess) -> None:
    assert sq.stdout == py.stdout
    assert sq.stderr == py.stderr
    assert sq.returncode == py.returncode


# --- lifetimes: objects die when the program drops them ------------------------------------------


def test_a_recorded_object_dies_when_the_program_drops_it(tmp_path):
    """x recorded as an argument, a return value and an expression value: ``del x`` runs its
    ``__del__`` and its ``weakref.finalize`` callback at once and kills its weak reference, as
    without squall."""
    py = plain("lifetimes.py", "object")
    assert py.stdout.splitlines() == [
        "del x",
        "__del__ x",
        "finalize x",
        "after del: x alive False",
        "after collect: x alive False",
        "end",
    ]
    assert_same_run(py, recorded("lifetimes.py", "object", out=tmp_path / "r.sqrec"))


def test_a_recorded_cycle_is_collected_as_without_squall(tmp_path):
    py = plain("lifetimes.py", "cycle")
    assert py.stdout.splitlines() == [
        "del c",
        "after del: c alive True",
        "finalize c",
        "__del__ c",
        "collect found garbage: True",
        "after collect: c alive False",
        "end",
    ]
    assert_same_run(py, recorded("lifetimes.py", "cycle", out=tmp_path / "r.sqrec"))


def test_recorded_writes_start_no_collection_the_program_would_not(tmp_path):
    """gc_counts.py holds gen 0 at its threshold and writes through write slots (tuple targets,
    ``o.n += i % 2``): a slot the collector counted started a collection at each write."""
    py = plain("gc_counts.py")
    assert py.stdout == "100 collections: 0\n", py.stdout
    assert_same_run(py, recorded("gc_counts.py", out=tmp_path / "r.sqrec"))


@pytest.mark.parametrize("holder", ["slots", "dict", "list", "tuple"])
def test_a_recorded_value_that_cannot_be_weakly_referenced_lets_go_of_what_it_holds(tmp_path, holder):
    """A ``__slots__`` object, a dict, a list, a tuple recorded, then dropped: the object it held
    dies at once (its ``__del__``, its finalizer, its weak reference), as without squall."""
    py = plain("lifetimes.py", holder)
    m = f"member of {holder}"
    assert py.stdout.splitlines() == [
        f"del the {holder}",
        f"__del__ {m}",
        f"finalize {m}",
        "after del: member alive False",
        "after collect: member alive False",
        "end",
    ]
    assert_same_run(py, recorded("lifetimes.py", holder, out=tmp_path / "r.sqrec"))


LIVE_SOURCE = """
class Node:
    def __init__(self, name):
        self.name = name

def take(v):
    return None

def give(v):
    return v

def record(v):
    take(v)
    v = give(v)
    box = [v]
    if box[0] is not None:
        pass
"""


@pytest.fixture
def live_program():
    api.stop_recording()
    api.clear_recordings()
    api.set_flow(0)
    mod = types.ModuleType("vp_live_lifetimes")
    sys.modules[mod.__name__] = mod
    exec(
        rewrite.compile_instrumented(LIVE_SOURCE, "/src/vp_live_lifetimes.py", mod.__name__, mode="full"), mod.__dict__
    )
    api.start_recording(install_hook=False)
    try:
        yield mod
    finally:
        api.stop_recording()
        api.clear_recordings()
        sys.modules.pop(mod.__name__, None)


def test_the_live_recording_lets_a_recorded_object_die_at_del(live_program):
    x = live_program.Node("x")
    finalized = []
    weakref.finalize(x, finalized.append, "x")
    alive = weakref.ref(x)
    live_program.record(x)
    items = [live_program.Node("in a list")]
    member = weakref.ref(items[0])
    live_program.record(items)
    api.stop_recording()
    del x, items
    assert (alive() is None, member() is None, finalized) == (True, True, ["x"])
    gc.collect()
    assert (alive() is None, member() is None, finalized) == (True, True, ["x"])
    # what was recorded stays readable
    calls = [
        e
        for e in indexes.get_referenced_maps_timeline(0, threading.get_native_id())
        if e["type"] == "fn-call" and e["fn_name"] == "take"
    ]
    first, second = (values.deref_val_id(e["fn_args_ref"])[0] for e in calls)
    assert first.name == "x" and second[0].name == "in a list"


# --- references: sys.getrefcount and gc.get_referrers --------------------------------------------


def _refs_lines(text: str) -> Dict[str, Dict[str, str]]:
    """refs.py's output by value: {"object": {"refcount": "3 3", "referrers": "[...]"}, ...}."""
    out: Dict[str, Dict[str, str]] = {}
    for line in text.splitlines():
        m = re.match(r"(\w+)( member)? refcount ([\d ]+) referrers (.*)$", line)
        assert m, line
        key = m.group(1) + (" member" if m.group(2) else "")
        out[key] = {"refcount": m.group(3).strip(), "referrers": m.group(4)}
    return out


@pytest.fixture(scope="module")
def refs_runs(tmp_path_factory):
    py = plain("refs.py")
    assert py.returncode == 0, py.stderr
    sq = recorded("refs.py", out=tmp_path_factory.mktemp("refs") / "r.sqrec")
    assert sq.returncode == 0, sq.stderr
    return _refs_lines(py.stdout), _refs_lines(sq.stdout)


REFS_VALUES = ["object", "slots", "list", "list member", "dict", "tuple", "tuple member"]


@pytest.mark.parametrize("value", REFS_VALUES)
def test_refcounts_after_recorded_calls_are_as_without_squall(refs_runs, value):
    py, sq = refs_runs
    assert sq[value]["refcount"] == py[value]["refcount"]


@pytest.mark.parametrize("value", REFS_VALUES)
def test_gc_referrers_of_a_recorded_value_are_as_without_squall(refs_runs, value):
    py, sq = refs_runs
    assert "squall" not in sq[value]["referrers"]
    assert sq[value]["referrers"] == py[value]["referrers"]


# --- the recorder runs none of the program's code -----------------------------------------------


def _log(path: Path) -> collections.Counter:
    return collections.Counter(path.read_text().splitlines()) if path.exists() else collections.Counter()


#: Queries that print every kind of recorded value (arguments, returns, expressions, locals).
QUERIES = [
    ["summary"],
    ["calls", "take", "--limit", "100"],
    ["calls", "give", "--limit", "100"],
    ["calls", "record", "--limit", "100"],
    ["search", "Spy", "--limit", "50"],
    ["exceptions"],
]

LOAD_AND_PRINT = r"""
import sys
import spymod  # the program's classes are importable here: nothing may call them
import squall
from squall import values

rec = squall.load(sys.argv[1])
for fid, tids in rec.all_flows().items():
    for tid in tids:
        tl = rec.get_referenced_maps_timeline(fid, tid)
        for e in tl[:5000]:
            for key in ("fn_args_ref", "result_ref", "value_ref", "throwable_ref"):
                if e.get(key) is not None:
                    v = rec.deref_val_id(e[key])
                    values.pformat(v)
                    values.safe_repr(v)
                    str(v)
            if e["type"] == "fn-call":
                rec.frame_data(fid, tid, e["idx"])
                rec.bindings(fid, tid, e["idx"] + 1 if e["idx"] + 1 < len(tl) else e["idx"])
print("read")
"""


@pytest.fixture(scope="module")
def spies(tmp_path_factory):
    """spies.py run plainly and recorded; then the file queried. Each with its own $SPY_LOG."""
    d = tmp_path_factory.mktemp("spies")
    plain_log, rec_log, query_log = d / "plain.log", d / "recorded.log", d / "queried.log"
    py = plain("spies.py", SPY_LOG=str(plain_log))
    assert py.returncode == 0, py.stderr
    path = d / "spies.sqrec"
    sq = recorded("spies.py", out=path, SPY_LOG=str(rec_log))
    for q in QUERIES:
        r = run([SQUALL, "query", path, *q], SPY_LOG=str(query_log))
        assert r.returncode == 0, (q, r.stderr)
    r = run([PYTHON, "-c", LOAD_AND_PRINT, path], SPY_LOG=str(query_log))
    assert r.returncode == 0 and r.stdout == "read\n", r.stderr
    return {
        "plain": py,
        "recorded": sq,
        "plain_log": _log(plain_log),
        "recorded_log": _log(rec_log),
        "query_log": _log(query_log),
    }


SPY_CLASSES = ["Spy", "SpySlots", "SpyList", "SpyDict"]


def _of(log: collections.Counter, cls: str) -> Dict[str, int]:
    return {k: n for k, n in sorted(log.items()) if k.split(".")[0] == cls}


@pytest.mark.parametrize("cls", SPY_CLASSES)
def test_recording_and_saving_call_none_of_the_programs_code(spies, cls):
    """How often spies.py's special methods, __getattribute__/__getattr__ and properties ran
    while it was recorded and its recording saved: exactly as often as without squall."""
    plain_calls = _of(spies["plain_log"], cls)
    assert plain_calls, "the program uses each class itself"
    assert _of(spies["recorded_log"], cls) == plain_calls


def test_the_recorded_program_prints_what_it_prints_without_squall(spies):
    assert_same_run(spies["plain"], spies["recorded"])


def test_querying_a_saved_recording_calls_none_of_the_programs_code(spies):
    """`squall query` and `squall.load` (deref, previews, locals), in processes that can import
    the program's classes, run none of them."""
    assert spies["query_log"] == collections.Counter()


# --- __repr__s that raise, sleep or take the program's lock ---------------------------------------


@pytest.mark.parametrize("kind", ["raise", "exit"])
def test_a_repr_that_raises_changes_nothing_in_the_program(tmp_path, kind):
    py = plain("reprs.py", kind)
    assert (py.stdout, py.stderr, py.returncode) == (f"done {kind}\n", "", 0)
    assert_same_run(py, recorded("reprs.py", kind, out=tmp_path / "r.sqrec", SPY_LOG=str(tmp_path / "log")))


def _timed(program: str, *args: str, out: Path, timeout: float, **env: str):
    start = time.monotonic()
    try:
        r = recorded(program, *args, out=out, timeout=timeout, **env)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - start
    return r, time.monotonic() - start


def test_a_repr_that_sleeps_does_not_slow_the_recorded_run(tmp_path):
    log = tmp_path / "log"
    py = plain("reprs.py", "sleep")
    assert (py.stdout, py.stderr, py.returncode) == ("done sleep\n", "", 0)
    control, control_s = _timed("reprs.py", "control", out=tmp_path / "c.sqrec", timeout=30)
    assert control is not None and control.returncode == 0, control
    sq, sq_s = _timed("reprs.py", "sleep", out=tmp_path / "s.sqrec", timeout=control_s + 3, SPY_LOG=str(log))
    calls = _log(log)["__repr__ sleep"]
    assert sq is not None, f"killed after {sq_s:.1f}s (the control run took {control_s:.1f}s); __repr__ ran {calls}x"
    assert_same_run(py, sq)
    # what would slow it is the sleeping __repr__ (1 s a call): it must never run. A wall-time
    # bound here (it was control + 0.5 s) fails under load with no __repr__ call at all.
    assert calls == 0, f"{sq_s:.1f}s against {control_s:.1f}s; __repr__ ran {calls}x"


def test_a_repr_that_takes_the_programs_lock_does_not_block_the_recorded_run(tmp_path):
    """The program holds a lock until it exits; a __repr__ needing it waits (1 s at most, then says
    so on stderr). Without squall nothing calls that __repr__."""
    log = tmp_path / "log"
    py = plain("reprs.py", "lock")
    assert (py.stdout, py.stderr, py.returncode) == ("done lock\n", "", 0)
    sq, sq_s = _timed("reprs.py", "lock", out=tmp_path / "l.sqrec", timeout=3, SPY_LOG=str(log))
    calls = _log(log)["__repr__ lock"]
    assert sq is not None, f"killed after {sq_s:.1f}s; __repr__ ran {calls}x"
    assert_same_run(py, sq)
    assert calls == 0


# --- code run through runpy ----------------------------------------------------------------------------

RUNPY_MAIN = """
import os, runpy, sys
here = os.path.dirname(os.path.abspath(__file__))
g = runpy.run_path(os.path.join(here, "tool.py"))
print(g["__name__"], g["double"](4))
sys.path.insert(0, here)
g = runpy.run_module("helper", run_name="__helper__")
print(g["__name__"], g["triple"](2))
"""


def test_code_run_through_runpy_is_recorded_like_an_import(tmp_path):
    """`runpy.run_path(file)` compiles the file itself, past the import system: its functions were
    not recorded. Now they are, as its import would be (run_module goes through the import system).
    The program prints the same as with plain python."""
    import squall

    (tmp_path / "main.py").write_text(RUNPY_MAIN)
    (tmp_path / "tool.py").write_text("def double(x):\n    return x * 2\n\ndouble(1)\n")
    (tmp_path / "helper.py").write_text("def triple(x):\n    return x * 3\n\ntriple(1)\n")
    py = subprocess.run([PYTHON, "main.py"], cwd=str(tmp_path), env=_env(), capture_output=True, text=True, timeout=60)
    out = tmp_path / "r.sqrec"
    sq = subprocess.run(
        [str(SQUALL), "run", "--no-summary", "-o", str(out), "main.py"],
        cwd=str(tmp_path),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert py.stdout == "<run_path> 8\n__helper__ 6\n" and py.returncode == 0
    assert (sq.stdout, sq.stderr, sq.returncode) == (py.stdout, py.stderr, py.returncode)
    rec = squall.load(str(out))
    stats = {s["fn_name"]: s["cnt"] for s in rec.fn_call_stats(0)}
    assert stats.get("double") == 2 and stats.get("triple") == 2, stats


# --- recursion headroom ------------------------------------------------------------------------------

RECURSE = """
import sys
DEEPEST = [0]

def down(n):
    DEEPEST[0] = n
    down(n + 1)

try:
    down(1)
except RecursionError:
    pass
print(DEEPEST[0], sys.getrecursionlimit())
"""


@pytest.mark.parametrize("how", ["unrecorded", "recorded", "python -m squall", "-m module"])
def test_the_program_has_the_recursion_headroom_plain_python_gives_it(tmp_path, how):
    """squall's own frames below the program's `__main__` (its console script, `main`, `cmd_run`,
    ...) counted against the recursion limit: a recursive function reached 6 frames fewer before
    `RecursionError` (9 under `python -m squall`). Recorded code reaches one frame fewer before
    3.12: there every call of a C function counts against the limit too, and in the deepest frame
    the recording entry points' calls are the ones that raise (from 3.12 on C calls have their
    own limit)."""
    (tmp_path / "deep.py").write_text(RECURSE)
    py = subprocess.run([PYTHON, "deep.py"], cwd=str(tmp_path), env=_env(), capture_output=True, text=True, timeout=60)
    squall = [str(SQUALL), "run", "--no-summary", "--no-save"]
    cmd = {
        "unrecorded": [*squall, "--skip", "__main__", "deep.py"],
        "recorded": [*squall, "deep.py"],
        "python -m squall": [
            PYTHON,
            "-m",
            "squall",
            "run",
            "--no-summary",
            "--no-save",
            "--skip",
            "__main__",
            "deep.py",
        ],
        "-m module": [*squall, "--skip", "deep", "--skip", "__main__", "-m", "deep"],
    }[how]
    sq = subprocess.run(cmd, cwd=str(tmp_path), env=_env(), capture_output=True, text=True, timeout=60)
    assert py.returncode == 0 and sq.returncode == 0, sq.stderr
    plain_depth, limit = map(int, py.stdout.split())
    assert limit == 1000 and plain_depth > 900
    fewer = 1 if how == "recorded" and sys.version_info < (3, 12) else 0
    assert sq.stdout.split() == [str(plain_depth - fewer), str(limit)]


def test_a_program_may_lower_the_recursion_limit_as_under_plain_python(tmp_path):
    """`sys.setrecursionlimit(5)` at module level: plain python allows it (depth 1); under squall
    its own frames made the depth 6 ("the limit is too low"). After the program squall's counter
    stays shifted (refused to go back above the program's limit): squall still exits cleanly."""
    (tmp_path / "low.py").write_text(
        "import sys\nsys.setrecursionlimit(5)\n\ndef f(n):\n    return f(n + 1)\n\n"
        "try:\n    f(0)\nexcept RecursionError as e:\n    print('RecursionError', e)\nprint('limit', sys.getrecursionlimit())\n"
    )
    py = subprocess.run([PYTHON, "low.py"], cwd=str(tmp_path), env=_env(), capture_output=True, text=True, timeout=60)
    sq = subprocess.run(
        [str(SQUALL), "run", "--no-summary", "--skip", "__main__", "-o", "low.sqrec", "low.py"],
        cwd=str(tmp_path),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert py.stdout.splitlines()[-1] == "limit 5" and py.returncode == 0
    assert (sq.stdout, sq.stderr, sq.returncode) == (py.stdout, py.stderr, py.returncode)


def test_generators_suspended_at_exit_close_as_without_squall(tmp_path):
    """Python closes generators still suspended in a module at shutdown, after restoring its
    original builtins: their handlers run then, and must not miss squall's entry points (they
    printed `NameError: name '_sq_unwind' is not defined` into the program's stderr)."""
    py = plain("suspended_at_exit.py")
    assert "counted closed" in py.stdout and "held left" in py.stdout and py.stderr == ""
    assert_same_run(py, recorded("suspended_at_exit.py", out=tmp_path / "r.sqrec"))
