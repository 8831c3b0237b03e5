"""Stress tests of the file sink (`crates/squall_python/src/persistence/sink.rs`): programs recorded with
``squall run -o`` that end while the flusher is streaming the recording (every 0.5 s), in every
way a program can end, under load (several threads, many entries), a few times each.

For each run: the program's own stdout, stderr and exit code are those of plain ``python``
(squall's summary is cut off stderr first, and checked on its own), and the file either opens
complete, with exactly the calls the program made, or says where it was cut and holds a
prefix of them; squall never says "saved" over a file that does not open complete.

A second group records objects whose ``__repr__`` sleeps, takes a lock the program holds or
raises, and list/dict subclasses whose dunders count their calls, while flushes happen: the
counters (printed by the program at exit) and all output must be those of plain ``python``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import squall

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX signals and exits")

SQUALL = str(Path(sys.executable).parent / "squall")
SUMMARY = "--- squall: recording summary ---\n"


def _env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONSTARTUP", None)
    env.pop("SQUALL_DEBUG_PAUSES", None)
    env["PYTHONHASHSEED"] = "0"
    return env


def _split_summary(stderr: str) -> tuple[str, str]:
    """The program's stderr and squall's own end of run: the save line of a big recording
    (``squall: saving N entries ...``) and the summary, printed after the program's output."""
    ends = [m.start() for m in (re.search(r"^squall: saving ", stderr, re.M),) if m]
    ends += [at for at in (stderr.find(SUMMARY),) if at >= 0]
    if not ends:
        return stderr, ""
    return stderr[: min(ends)], stderr[min(ends) :]


def _run(cmd: list[str], cwd: Path, timeout: float = 40, preexec_fn=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=str(cwd), env=_env(), capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn
    )


def _both(script: Path, args: list[str], out: Path) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    py = _run([sys.executable, str(script), *args], script.parent)
    sq = _run([SQUALL, "run", "-o", str(out), str(script), *args], script.parent)
    return py, sq


def _same_as_python(py: subprocess.CompletedProcess, sq: subprocess.CompletedProcess) -> str:
    """Asserts the program showed the same under squall; returns squall's summary."""
    program_err, summary = _split_summary(sq.stderr)
    assert sq.returncode == py.returncode, (sq.returncode, py.returncode, sq.stderr[-3000:])
    assert sq.stdout == py.stdout
    assert program_err == py.stderr
    return summary


def _info(path: Path, show: bool = True) -> tuple[dict, str]:
    """`squall.load(path).info()` and what `squall info` prints (if `show`; it takes a process)."""
    info = squall.load(path).info()
    if not show:
        return info, ""
    shown = _run([SQUALL, "info", str(path)], path.parent)
    assert shown.returncode == 0, shown.stderr
    return info, shown.stdout


def _calls(rec, name: str) -> int:
    return sum(s["cnt"] for flow in rec.all_flows() for s in rec.fn_call_stats(flow) if s["fn_name"] == name)


def _assert_complete(path: Path, summary: str, exit_code: int, interrupted: bool = False, show: bool = True) -> object:
    info, shown = _info(path, show)
    assert info["completed"], info["cut_short"]
    assert info["cut_short"] is None
    # The end marker's counts are the engine's at close: what the file holds must be all of it
    # (a flush that wrote chunks twice or lost some would differ).
    assert info["entries"] == info["stats"]["entries"], (info["entries"], info["stats"])
    assert info["stats"]["exit_code"] == exit_code & 0xFFFFFFFF
    assert info["stats"]["interrupted"] == (1 if interrupted else 0)
    if not show:
        pass
    elif interrupted:
        assert "status     completed (the program was interrupted: Ctrl-C)" in shown
    else:
        assert f"status     completed (exit code {exit_code})" in shown
    assert f"recording saved to {path}" in summary
    return squall.load(path)


def _assert_cut(path: Path, summary: str, show: bool = True) -> tuple[object, str]:
    """A cut file: it opens, says where it was cut, and nothing claimed it saved."""
    assert "recording saved" not in summary
    info, shown = _info(path, show)
    assert not info["completed"]
    cut = info["cut_short"]
    assert cut and ("no end marker" in cut or "truncated chunk at byte" in cut), cut
    assert not show or f"status     CUT SHORT: {cut}" in shown
    return squall.load(path), cut


# --- exits under load ------------------------------------------------------------------------

LOAD = r"""
import os, sys, threading, time

class Item:
    def __init__(self, i, k):
        self.i = i
        self.k = k
        self.tags = [i, str(i), (k, i)]

def work(i, k, box):
    it = Item(i, k)
    box[i % 7] = it.tags
    if i % 100 == 0:
        time.sleep(0.008)  # a run of a second or more: flushes happen while it works
    return {"i": i, "sq": i * i, "item": it}

def worker(k, n, fail):
    box = {}
    for i in range(n):
        work(i, k, box)
    if fail:
        raise ValueError(f"worker {k} failed")

mode, threads, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ts = [threading.Thread(target=worker, args=(k, n, mode == "thread_exc" and k == 1))
      for k in range(threads)]
for t in ts:
    t.start()
print("started", flush=True)
worker(-1, n, False)
if mode != "unjoined":
    for t in ts:
        t.join()
print("work done")
sys.stdout.flush()

def end(mode):
    if mode in ("sys_exit", "unjoined"):
        sys.exit(3)
    if mode == "os_exit":
        os._exit(0)
    if mode == "main_exc":
        raise RuntimeError("main failed at the end")

end(mode)
"""

EXITS = {  # mode: (exit code, complete file)
    "normal": (0, True),
    "sys_exit": (3, True),
    "unjoined": (3, True),  # sys.exit while the other threads still work: python waits for them
    "thread_exc": (0, True),
    "main_exc": (1, True),
    "os_exit": (0, False),
}


@pytest.mark.parametrize("mode", list(EXITS))
def test_exit_under_load_while_flushing(tmp_path, mode):
    script = tmp_path / "load.py"
    script.write_text(LOAD)
    code, complete = EXITS[mode]
    threads = 3
    # Different lengths (about 1 to 1.5 s) end the program at different moments of the
    # flusher's half-second cycle. The program's output does not depend on the length: python
    # runs it once, short.
    py = _run([sys.executable, str(script), mode, str(threads), "500"], tmp_path)
    assert py.returncode == code
    for rep, n in enumerate((6500, 8400, 10300)):
        out = tmp_path / f"{mode}-{rep}.sqrec"
        sq = _run([SQUALL, "run", "-o", str(out), str(script), mode, str(threads), str(n)], tmp_path)
        summary = _same_as_python(py, sq)
        calls = (threads + 1) * n
        if complete:
            rec = _assert_complete(out, summary, code, show=rep == 0)
            assert _calls(rec, "work") == calls
            assert _calls(rec, "Item.__init__") == calls
            assert _calls(rec, "worker") == threads + 1
            excs = [e for e in rec.exceptions() if e["exc_type"] in ("ValueError", "RuntimeError")]
            assert len(excs) == {"thread_exc": 1, "main_exc": 1}.get(mode, 0)
        else:
            # The file writer's thread writes without the GIL, so os._exit can come in the
            # middle of a chunk's write, which the kernel then ends at a page boundary: the file
            # says so ("truncated chunk at byte N: the file ends inside it"), or, between two
            # writes, that it has no end marker (`_assert_cut` accepts either).
            rec, _ = _assert_cut(out, summary, show=rep == 0)
            assert 0 < _calls(rec, "work") <= calls


# --- signals mid-run -------------------------------------------------------------------------

SIGNALLED = r"""
import json, os, sys, threading, time

stop = threading.Event()
counts = {}

class Item:
    def __init__(self, i):
        self.i = i
        self.tags = [i, str(i)]

def work(i, box):
    it = Item(i)
    box[i % 5] = it
    return [i, it]

def worker(k):
    box = {}
    n = 0
    while not stop.is_set() and n < 2_000_000:
        work(n, box)
        n += 1
        counts[k] = n
        if n % 300 == 0:
            time.sleep(0.001)

ts = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
for t in ts:
    t.start()
box = {}
for i in range(3000):
    work(i, box)
print("ready", flush=True)
interrupted = False
try:
    worker("main")
except KeyboardInterrupt:
    interrupted = True
stop.set()
for t in ts:
    t.join()
with open(sys.argv[1], "w") as f:
    json.dump(counts, f)
print("interrupted" if interrupted else "not interrupted", flush=True)
if interrupted:
    raise KeyboardInterrupt
"""


def _signalled(cmd: list[str], cwd: Path, sig: int, after: float) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(cmd, cwd=str(cwd), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        time.sleep(after)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, first + out, err)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_signal_mid_run_under_load(tmp_path, sig):
    script = tmp_path / "sig.py"
    script.write_text(SIGNALLED)
    signum = getattr(signal, sig)
    # What the program shows does not depend on when the signal comes: python runs it once.
    py = _signalled([sys.executable, str(script), str(tmp_path / "py.json")], tmp_path, signum, 0.3)
    assert py.returncode == -signum
    reps = (0.75, 1.25)
    for rep, after in enumerate(reps):
        out = tmp_path / f"{sig}-{rep}.sqrec"
        counts_sq = tmp_path / f"sq-{rep}.json"
        sq = _signalled([SQUALL, "run", "-o", str(out), str(script), str(counts_sq)], tmp_path, signum, after)
        summary = _same_as_python(py, sq)
        if sig == "SIGINT":
            assert py.stdout == "ready\ninterrupted\n"
            counts = json.loads(counts_sq.read_text())
            rec = _assert_complete(out, summary, 130, interrupted=True, show=rep == 0)
            # The main thread's KeyboardInterrupt may land inside a call of work() before it
            # counted itself: that call is recorded, not counted.
            assert _calls(rec, "work") - 3000 - sum(counts.values()) in (0, 1)
        else:
            assert not summary
            rec, _ = _assert_cut(out, summary, show=rep == 0)
            # A flush ran after "ready": the 3000 calls made before it are in the file.
            assert _calls(rec, "work") >= 3000


def test_a_disk_that_fills_up_mid_run_leaves_a_cut_file_and_says_so(tmp_path):
    """The file cannot grow past 1 MiB (RLIMIT_FSIZE; Python ignores SIGXFSZ, so the write fails
    with EFBIG): the program runs on unchanged, the summary says the file is not complete (it
    said "not saved: --no-save"), and the file says where it ends."""
    resource = pytest.importorskip("resource")
    script = tmp_path / "load.py"
    script.write_text(LOAD)
    out = tmp_path / "full.sqrec"
    args = ["normal", "3", "9300"]
    py = _run([sys.executable, str(script), *args], tmp_path)

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    sq = _run([SQUALL, "run", "-o", str(out), str(script), *args], tmp_path, preexec_fn=small_files)
    failed = f"squall: saving the recording to `{out}` failed (writing the recording failed: File too large"
    assert sq.stderr.startswith(failed), sq.stderr[:2000]
    sq.stderr = sq.stderr.split("\n", 1)[1]  # the flusher says so when it happens
    summary = _same_as_python(py, sq)
    assert f"recording NOT saved completely: {failed[len('squall: ') :]}" in summary
    assert "--no-save" not in summary
    assert out.stat().st_size <= 1 << 20
    rec, _ = _assert_cut(out, summary)
    assert 0 < _calls(rec, "work") < 4 * 9300


def test_a_disk_full_at_the_last_flush_is_said_as_when_the_flusher_meets_it(tmp_path):
    """The program ends before any periodic flush, so the file fills up in the flush at exit:
    stderr says so with the same line as mid-run (it said so only in the summary, with other
    words: which flush meets a full disk is a matter of timing)."""
    resource = pytest.importorskip("resource")
    script = tmp_path / "short.py"
    script.write_text("def f(i):\n    return str(i) * 3\n\nprint(sum(len(f(i)) for i in range(20000)))\n")
    out = tmp_path / "full.sqrec"
    py = _run([sys.executable, str(script)], tmp_path)

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    sq = _run([SQUALL, "run", "-o", str(out), str(script)], tmp_path, preexec_fn=small_files)
    failed = f"squall: saving the recording to `{out}` failed (writing the recording failed: File too large"
    assert sq.stderr.startswith(failed), sq.stderr[:2000]
    sq.stderr = sq.stderr.split("\n", 1)[1]
    summary = _same_as_python(py, sq)
    assert f"recording NOT saved completely: {failed[len('squall: ') :]}" in summary
    assert out.stat().st_size <= 4096
    _assert_cut(out, summary)


# --- a file cut anywhere ---------------------------------------------------------------------


def test_a_file_cut_at_any_byte_opens_and_says_where(tmp_path):
    """What SIGKILL or a full disk leaves: the file cut at any byte, in the middle of a flush's
    chunks. Every prefix opens (or is refused with a clear error when the header itself is
    cut), says where it was cut, and its calls are a prefix of the program's."""
    script = tmp_path / "load.py"
    script.write_text(LOAD)
    out = tmp_path / "whole.sqrec"
    sq = _run([SQUALL, "run", "-q", "-o", str(out), str(script), "normal", "2", "4000"], tmp_path)
    assert sq.returncode == 0, sq.stderr
    whole = out.read_bytes()
    total = _calls(squall.load(out), "work")
    assert total == 3 * 4000
    cut_file = tmp_path / "cut.sqrec"
    sizes = sorted({*range(0, 400, 37), *range(400, len(whole), max(1, len(whole) // 60)), len(whole) - 1})
    seen = 0
    for size in sizes:
        cut_file.write_bytes(whole[:size])
        with warnings.catch_warnings(record=True) as loading:
            warnings.simplefilter("always")
            try:
                rec = squall.load(cut_file)
            except ValueError as e:
                assert size < 400 and ("empty" in str(e) or "header" in str(e) or "cut" in str(e)), (size, e)
                continue
        info = rec.info()
        assert not info["completed"] and info["cut_short"], size
        # Loading says once where the file was cut and what loaded; the queries say nothing more.
        assert [str(w.message) for w in loading] == [
            f"the recording `{cut_file}` is cut short ({size} bytes): {info['cut_short']}. Loaded what comes "
            f"before: {info['entries']} entries in {sum(len(t) for t in rec.all_flows().values())} thread(s) of "
            f"{len(rec.all_flows())} flow(s), {info['forms']} function(s); values it did not save show as <not saved>"
        ]
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            n = _calls(rec, "work")
            # The values of the last entries read may be in the part that was cut: they read
            # as not saved.
            for flow in rec.all_flows():
                for t in rec.flow_threads_info(flow):
                    tl = rec.get_referenced_maps_timeline(flow, t["thread_id"])
                    for e in tl[-30:]:
                        for key in ("fn_args_ref", "result_ref", "value_ref", "key_ref"):
                            if e.get(key) is not None:
                                v = rec.deref_val_id(e[key])
                                if getattr(v, "type_name", None) == "<not saved>":
                                    assert "cut short" in repr(v)
        assert [str(w.message) for w in warned] == []
        assert n <= total and n >= seen, (size, n, seen)
        seen = n


# --- the recorder runs none of the program's code --------------------------------------------

DUNDERS = r"""
import atexit, json, sys, threading, time

COUNTS = {}
COUNTING = threading.Lock()

def bump(name):
    # Three threads count: unlocked, a switch between the get and the store loses a count (CI
    # saw 8960 of 9000 on 3.9 and 3.10 recorded under load; plain Python can lose them too).
    with COUNTING:
        COUNTS[name] = COUNTS.get(name, 0) + 1

def report():
    print(json.dumps(COUNTS, sort_keys=True))

atexit.register(report)

held = threading.Lock()
held.acquire()  # held by the program for its whole run, exit included

class SlowRepr:
    def __init__(self, i):
        self.i = i
    def __repr__(self):
        bump("SlowRepr.__repr__")
        time.sleep(0.3)
        return f"SlowRepr({self.i})"

class LockRepr:
    def __repr__(self):
        bump("LockRepr.__repr__")
        if held.acquire(timeout=2):  # a deadlock, had the program not given up
            held.release()
        return "LockRepr()"

class RaisingRepr:
    def __repr__(self):
        bump("RaisingRepr.__repr__")
        raise RuntimeError("no repr for you")
    __str__ = __repr__

class CountingList(list):
    def __len__(self):
        bump("CountingList.__len__")
        return list.__len__(self)
    def __iter__(self):
        bump("CountingList.__iter__")
        return list.__iter__(self)
    def __getitem__(self, i):
        bump("CountingList.__getitem__")
        return list.__getitem__(self, i)
    def __eq__(self, other):
        bump("CountingList.__eq__")
        return list.__eq__(self, other)
    def __hash__(self):
        bump("CountingList.__hash__")
        return id(self) >> 4
    def __repr__(self):
        bump("CountingList.__repr__")
        return "CountingList(...)"

class CountingDict(dict):
    def __len__(self):
        bump("CountingDict.__len__")
        return dict.__len__(self)
    def __iter__(self):
        bump("CountingDict.__iter__")
        return dict.__iter__(self)
    def __getitem__(self, k):
        bump("CountingDict.__getitem__")
        return dict.__getitem__(self, k)
    def keys(self):
        bump("CountingDict.keys")
        return dict.keys(self)
    def items(self):
        bump("CountingDict.items")
        return dict.items(self)
    def values(self):
        bump("CountingDict.values")
        return dict.values(self)
    def __eq__(self, other):
        bump("CountingDict.__eq__")
        return dict.__eq__(self, other)
    def __hash__(self):
        bump("CountingDict.__hash__")
        return id(self) >> 4
    def __repr__(self):
        bump("CountingDict.__repr__")
        return "CountingDict(...)"

class Watched:
    def __init__(self):
        object.__setattr__(self, "n", 0)
    def __getattr__(self, name):
        bump("Watched.__getattr__")
        raise AttributeError(name)
    @property
    def double(self):
        bump("Watched.double")
        return 2 * object.__getattribute__(self, "n")
    def __len__(self):
        bump("Watched.__len__")
        return 1
    def __bool__(self):
        bump("Watched.__bool__")
        return True
    def __eq__(self, other):
        bump("Watched.__eq__")
        return self is other
    def __hash__(self):
        bump("Watched.__hash__")
        return 7

class CountingError(Exception):
    def __str__(self):
        bump("CountingError.__str__")
        return "counted"
    def __repr__(self):
        bump("CountingError.__repr__")
        return "CountingError(counted)"

def use(i, slow, locked, raising, lst, dct, watched):
    lst.append(i)
    dct[i % 11] = lst
    watched.n = i
    if i % 40 == 0:
        try:
            raise CountingError(i)
        except CountingError as e:
            caught = e
        time.sleep(0.012)  # about a second in all: several flushes
    return slow, locked, raising, lst, dct, watched

def worker(k, n, fail):
    lst, dct, watched = CountingList([k]), CountingDict(k=k), Watched()
    for i in range(n):
        use(i, SlowRepr(i), LockRepr(), RaisingRepr(), lst, dct, watched)
        if len(lst) > 20:
            del lst[:10]
    if fail:
        raise CountingError(k)

def main(mode):
    ts = [threading.Thread(target=worker, args=(k, 3000, mode == "raise" and k == 0)) for k in range(2)]
    for t in ts:
        t.start()
    worker("main", 3000, False)
    for t in ts:
        t.join()
    if mode == "raise":
        raise CountingError("main")

main(sys.argv[1])
"""


@pytest.mark.parametrize("mode", ["normal", "raise"])
def test_program_code_is_never_run_by_the_recorder(tmp_path, mode):
    script = tmp_path / "dunders.py"
    script.write_text(DUNDERS)
    out = tmp_path / "dunders.sqrec"
    py, sq = _both(script, [mode], out)
    summary = _same_as_python(py, sq)
    counts = json.loads(py.stdout.splitlines()[-1])
    assert "SlowRepr.__repr__" not in counts and "LockRepr.__repr__" not in counts
    rec = _assert_complete(out, summary, 1 if mode == "raise" else 0)
    assert _calls(rec, "use") == 3 * 3000
    # The summary still tells the escaped exceptions (one in a thread, one in main) apart,
    # without their __str__.
    assert summary.count("NOT caught") == (2 if mode == "raise" else 0), summary
    # What was recorded is the values' state, read without them.
    main_thread = next(t["thread_id"] for t in rec.flow_threads_info(0) if t["thread_name"] == "MainThread")
    tl = rec.get_referenced_maps_timeline(0, main_thread)
    last = [e for e in tl if e.get("fn_name") == "use"][-1]
    i, slow, locked, raising, lst, dct, watched = rec.deref_val_id(last["fn_args_ref"])
    expected = ["main"]
    for j in range(2999):
        expected.append(j)
        if len(expected) > 20:
            del expected[:10]
    assert i == 2999 and slow.attrs == {"i": 2999} and watched.attrs == {"n": 2998}
    assert locked.attrs == {} and raising.attrs == {}
    assert list(lst) == expected and dict(dct)["k"] == "main" and list(dict(dct)[0]) == expected


LATE_THREADS = r"""
import atexit, threading, time

def work(i):
    return i * 2

def worker():
    for i in range(400):
        work(i)
        time.sleep(0.005)

atexit.register(print, "atexit ran")
threading.Thread(target=worker).start()
print("main done", flush=True)
"""


def test_sigint_while_waiting_for_the_programs_threads_at_exit(tmp_path):
    """Ctrl-C after the main thread ended, while Python waits for the other threads: Python
    reports the KeyboardInterrupt as unraisable (3.9-3.12: "Exception ignored in: <module
    'threading' ...>") and exits as it would have (code 0, atexit handlers run). squall's own traceback and
    exit by SIGINT came out instead, and the file was closed by atexit without the exit code."""
    script = tmp_path / "late.py"
    script.write_text(LATE_THREADS)
    out = tmp_path / "late.sqrec"
    py = _signalled([sys.executable, str(script)], tmp_path, signal.SIGINT, 0.4)
    sq = _signalled([SQUALL, "run", "-o", str(out), str(script)], tmp_path, signal.SIGINT, 0.4)
    summary = _same_as_python(py, sq)
    assert py.returncode == 0 and py.stdout == "main done\natexit ran\n"
    assert "_shutdown" in py.stderr and py.stderr.endswith("KeyboardInterrupt: \n")  # 3.9-3.12: "Exception ignored in"
    rec = _assert_complete(out, summary, 0)
    assert 0 < _calls(rec, "work") < 400


MANY_EXCEPTIONS = r"""
def inner(i):
    raise ValueError(i)

def outer(i):
    try:
        inner(i)
    except ValueError:
        return i

for i in range(50000):
    outer(i)
print("done", flush=True)
"""


def test_sigint_during_squalls_own_end_of_run_work(tmp_path):
    """Ctrl-C after the program ended, while squall finishes the file and summarizes 50,000
    exceptions (about a second): the program's exit code and output stay, the file is complete,
    and squall says what it cut short. Its own traceback and exit by SIGINT came out instead."""
    script = tmp_path / "many.py"
    script.write_text(MANY_EXCEPTIONS)
    out = tmp_path / "many.sqrec"
    sq = _signalled([SQUALL, "run", "-o", str(out), str(script)], tmp_path, signal.SIGINT, 0.25)
    assert sq.returncode == 0, sq.stderr[-3000:]
    assert sq.stdout == "done\n"
    program_err, summary = _split_summary(sq.stderr)
    assert "Traceback" not in sq.stderr
    if not summary:  # the usual case: the Ctrl-C came while summarizing
        assert program_err == f"squall: summary interrupted (Ctrl-C); the recording is saved to {out}\n"
        summary = f"recording saved to {out}"
    rec = _assert_complete(out, summary, 0)
    assert _calls(rec, "inner") == 50000


# --- processes the sink was not made for -----------------------------------------------------

FORKER = r"""
import os, sys, time

def work(i):
    return i * 2

for i in range(2000):
    work(i)
time.sleep(0.6)  # a flush
pid = os.fork()
if pid == 0:
    for i in range(100):
        work(-i)
    print("child done", flush=True)
    sys.exit(0)
os.waitpid(pid, 0)
for i in range(2000):
    work(i)
print("parent done", flush=True)
if sys.argv[1:] == ["kill"]:
    time.sleep(0.7)  # a flush, if the flusher runs again after the fork
    os.kill(os.getpid(), 9)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_leaves_the_parents_file_alone(tmp_path):
    """A child made by os.fork() that ends normally runs squall's end of run too: joining the
    parent's flusher thread panicked there (a PanicException traceback in the child's stderr),
    and closing would have written the child's rest and an end marker into the parent's file.
    The flusher stops for the fork (on 3.13 the program got "DeprecationWarning: This process
    is multi-threaded, use of fork() may lead to deadlocks" for squall's thread) and runs again
    in the parent after it."""
    script = tmp_path / "forker.py"
    script.write_text(FORKER)
    out = tmp_path / "fork.sqrec"
    py, sq = _both(script, [], out)
    summary = _same_as_python(py, sq)
    assert py.stdout == "child done\nparent done\n"
    assert "Panic" not in sq.stderr and "Traceback" not in sq.stderr
    assert summary.count("recording saved to") == 1  # the parent's
    assert f"is a fork of the one saving the recording to `{out}`" in summary
    rec = _assert_complete(out, summary, 0)
    assert _calls(rec, "work") == 4000
    killed = tmp_path / "killed.sqrec"
    py, sq = _both(script, ["kill"], killed)
    summary = _same_as_python(py, sq)
    assert py.returncode == -9
    rec, _ = _assert_cut(killed, summary, show=False)
    assert _calls(rec, "work") == 4000  # saved by the flusher started again after the fork


API_EXIT_WITHOUT_ATEXIT = r"""
import atexit, time
import squall.api as api

def work(i):
    return i

api.start_recording()
api.save_to("api.sqrec")
atexit._clear()  # squall's own handler goes too: nothing closes the file

class SlowToFree:
    def __del__(self):
        time.sleep(0.2)

keep = [SlowToFree() for _ in range(5)]  # the interpreter's end lasts a second
print("bye", flush=True)
"""


def test_an_interpreter_ending_with_the_file_open_is_left_alone_by_the_flusher(tmp_path):
    """The flusher woke up while (or after) the interpreter was finalized and attached to it:
    pyo3 panicked there ("The Python interpreter is not initialized") into the program's
    stderr. It now stops; the file is cut at its last flush."""
    script = tmp_path / "api_exit.py"
    script.write_text(API_EXIT_WITHOUT_ATEXIT)
    run = _run([sys.executable, str(script)], tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, "bye\n", "")
    _assert_cut(tmp_path / "api.sqrec", "")


THREADS_UNTOUCHED = r"""
import _thread, threading, time

COUNT = {"name": 0}

class Named(threading.Thread):
    @property
    def name(self):
        COUNT["name"] += 1
        return threading.Thread.name.fget(self)

    @name.setter
    def name(self, value):
        threading.Thread.name.fset(self, value)

def work(i):
    return i + 1

def raw():
    for i in range(3):
        work(i)
    done.release()

done = _thread.allocate_lock()
done.acquire()
_thread.start_new_thread(raw, ())  # a thread threading knows nothing of
done.acquire()
time.sleep(0.05)
print(threading.active_count(), sorted(type(t).__name__ for t in threading.enumerate()))
t = Named(target=work, args=(1,))
t.start()
t.join()
time.sleep(0.05)
print(threading.active_count(), sorted(type(t).__name__ for t in threading.enumerate()), COUNT)
"""


def test_naming_the_programs_threads_runs_none_of_its_code(tmp_path):
    """The recorder names a thread when it first records in it: it called
    threading.current_thread().name, which made a _DummyThread for a thread started with
    _thread (threading.active_count() and enumerate() changed) and ran a Thread subclass's
    `name` property."""
    script = tmp_path / "threads.py"
    script.write_text(THREADS_UNTOUCHED)
    out = tmp_path / "threads.sqrec"
    py, sq = _both(script, [], out)
    summary = _same_as_python(py, sq)
    assert py.stdout == "1 ['_MainThread']\n1 ['_MainThread'] {'name': 0}\n"
    rec = _assert_complete(out, summary, 0, show=False)
    assert _calls(rec, "work") == 4
    names = sorted(t["thread_name"] for flow in rec.all_flows() for t in rec.flow_threads_info(flow))
    assert names[0] == "(not a threading.Thread)" and names[1].startswith("Thread-1")  # "(work)" on 3.10+


SPINNER = r"""
import time

def work(i):
    return [i]

def spin():
    i = 0
    while True:
        work(i)
        i += 1
        if i % 200 == 0:
            time.sleep(0.001)
"""

API_DAEMON = r"""
import threading, time
import squall.api as api

api.start_recording()
api.save_to("daemon.sqrec")
import spinner  # instrumented: imported after recording started

threading.Thread(target=spinner.spin, daemon=True).start()
time.sleep(0.8)
print("bye")
"""


def test_the_end_marker_counts_what_the_file_holds(tmp_path):
    """Saved with the API, closed at exit while a daemon thread still records: its entries
    recorded while the close waited for the flusher are in the file, and the end marker's
    `entries` (taken before the close) said fewer."""
    (tmp_path / "spinner.py").write_text(SPINNER)
    script = tmp_path / "api_daemon.py"
    script.write_text(API_DAEMON)
    run = _run([sys.executable, str(script)], tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, "bye\n", "")
    info = squall.load(tmp_path / "daemon.sqrec").info()
    assert info["completed"] and info["entries"] > 0
    assert info["entries"] == info["stats"]["entries"]
