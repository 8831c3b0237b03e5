"""`--memory-limit` bounds the process: RSS growth stays within the limit plus 10%, saving to a
file and without one; without a file the recording stops at the limit and says so (saving, a
one-thread program goes on: what is saved leaves memory).

Growth is a run's peak RSS (`os.wait4`) less a baseline: the same program's plain peak plus what
importing squall costs (`squall run` of an empty program less `python` of it). Each program below
records far more than the limit would hold: many small objects with strings, floats, and a big
list changed a little at every call; the same objects made by 200 threads (a timeline, tables
and encoder caches each: 1.27x the limit without a file before their room was counted).
"""

import subprocess
import sys

import pytest

SQUALL = [sys.executable, "-m", "squall"]
LIMIT_MIB = 96

PROGRAM = """
class Item:
    def __init__(self, i):
        self.i = i
        self.name = "item-%d" % i
        self.tags = [i, "t%d" % (i % 97)]


def make(i):
    return Item(i)


def scale(i, x):
    return i * x + 1.5


def step(xs, i):
    xs[i % 100] = -i
    return len(xs)


def main(n):
    xs = list(range(5_000))
    total = 0.0
    for i in range(n):
        total += make(i).i + scale(i, 0.5)
        step(xs, i)
    return int(total)


print(main(1_500_000))
"""

THREADS = """
import threading


class Item:
    def __init__(self, i):
        self.i = i
        self.name = "item-%d" % i


def make(i):
    return Item(i)


def work(n, out):
    t = 0
    for i in range(n):
        t += make(i).i
    out.append(t)


def main(k, n):
    out = []
    ts = [threading.Thread(target=work, args=(n, out)) for _ in range(k)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(out)


print(main(200, 20_000))
"""

# name: (source, calls of `make` in all)
PROGRAMS = {"objects": (PROGRAM, 1_500_000), "threads": (THREADS, 200 * 20_000)}

# Saved entries leave memory past half the limit, and saved value nodes with them: a one-thread
# program is recorded whole while saving, within the limit. 200 threads that each hold less than
# their tables' eviction points still reach it (each thread's entries leave only once its table
# is three quarters full).
WHOLE_WHEN_SAVED = {"objects"}


# Runs a command in a small process of its own and prints its peak RSS: measured from the test's
# process, a child forked from it counts the test's own pages (a loaded recording) as its RSS.
MEASURE = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
out, err = p.stdout.read(), p.stderr.read()
_, status, usage = os.wait4(p.pid, 0)
sys.stderr.buffer.write(err)
sys.stdout.buffer.write(out)
sys.stdout.write("\\n@@peak_rss_kib=%d rc=%d\\n" % (usage.ru_maxrss, os.waitstatus_to_exitcode(status)))
"""


def run_measured(argv, cwd) -> tuple[float, subprocess.CompletedProcess]:
    """Runs `argv`, returns its peak RSS in MiB and what it printed."""
    r = subprocess.run([sys.executable, "-c", MEASURE, *argv], cwd=cwd, capture_output=True, text=True, timeout=600)
    out, _, tail = r.stdout.rpartition("\n@@peak_rss_kib=")
    kib, rc = tail.split()
    return int(kib) / 1024, subprocess.CompletedProcess(argv, int(rc.split("=")[1]), out, r.stderr)


@pytest.fixture(scope="module")
def import_cost(tmp_path_factory):
    """What importing squall adds to a process's peak RSS, in MiB."""
    d = tmp_path_factory.mktemp("memory_limit")
    (d / "empty.py").write_text("print(1)\n")
    empty_plain, _ = run_measured([sys.executable, "empty.py"], d)
    empty_squall, r = run_measured([*SQUALL, "run", "--no-save", "-q", "empty.py"], d)
    assert r.returncode == 0, r.stderr
    return max(0.0, empty_squall - empty_plain)


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def baseline(request, tmp_path_factory, import_cost):
    d = tmp_path_factory.mktemp("memory_limit")
    source, calls = PROGRAMS[request.param]
    (d / "prog.py").write_text(source)
    plain, r = run_measured([sys.executable, "prog.py"], d)
    assert r.returncode == 0, r.stderr
    return d, calls, plain + import_cost, plain, request.param


@pytest.mark.parametrize("saving", [True, False], ids=["saving", "no-file"])
def test_rss_growth_stays_within_the_memory_limit(baseline, saving):
    d, all_calls, base, plain, name = baseline
    where = ["-o", str(d / "rec.sqrec")] if saving else ["--no-save"]
    peak, r = run_measured([*SQUALL, "run", "--memory-limit", str(LIMIT_MIB), *where, "prog.py"], d)
    assert r.returncode == 0, r.stderr
    plain_out = subprocess.run([sys.executable, "prog.py"], cwd=d, capture_output=True, text=True).stdout
    assert r.stdout == plain_out  # the program is unchanged, and went on past the limit
    growth = peak - base
    assert growth <= LIMIT_MIB * 1.1, (
        f"peak RSS {peak:.0f} MiB, plain {plain:.0f} MiB, baseline {base:.0f} MiB: growth {growth:.0f} MiB "
        f"for a {LIMIT_MIB} MiB limit"
    )
    whole = saving and name in WHOLE_WHEN_SAVED
    if whole:
        # Recorded whole: nothing stopped it, and the file has every call.
        assert "reached the memory limit" not in r.stderr, r.stderr
    else:
        # It recorded until the limit, not less: the limit is what stopped it, said when it
        # happened and in the summary...
        assert "reached the memory limit of 96 MiB; recording stops everywhere" in r.stderr, r.stderr
        assert "limit=memory_limit, value=100663296 (96 MiB: recording stopped everywhere there" in r.stderr
        # ...and it did use it (a limit that holds because little was recorded proves nothing).
        assert growth >= LIMIT_MIB * 0.6, growth
    if saving:
        import squall

        rec = squall.load(d / "rec.sqrec")
        calls = {s["fn_name"].rsplit(".", 1)[-1]: s["cnt"] for s in rec.fn_call_stats(0)}
        if whole:
            assert calls["make"] == all_calls, calls
        else:
            assert 0 < calls["make"] < all_calls, calls


INDEXED = """
class Box:
    def __init__(self, i, inner=None):
        self.i = i
        self.inner = inner


def make(i):
    return Box(i)


def wrap(b):
    return Box(-1, b)
"""


def test_the_indexes_queries_build_over_a_recording_are_counted():
    # Showing an object met past `object_depth` builds each object's states and writes (the
    # indexes of `ValueStore`); the limit counts them (the end-of-run summary built 17 MB of
    # them on a recorded test suite, uncounted).
    import threading

    from squall import api, indexes, values
    from squall._instrument import rewrite

    api.stop_recording()
    api.clear_recordings()
    ns = {"__name__": "indexed"}
    exec(rewrite.compile_instrumented(INDEXED, "/src/indexed.py", "indexed"), ns)
    try:
        api.start_recording(install_hook=False)
        kept = [ns["make"](i) for i in range(50_000)]
        ns["wrap"](kept[7])
        api.stop_recording()
        before = api.engine_stats()["bytes"]
        tl = indexes.get_referenced_maps_timeline(0, threading.get_native_id())
        wrapped = [e for e in tl if e["type"] == "fn-call"][-1]
        shown = values.deref_val_id(wrapped["fn_args_ref"])
        assert "(i=7, inner=None)" in repr(shown[2])  # its earlier state, from the index
        grown = api.engine_stats()["bytes"] - before
        # 50,000 objects' states and 100,000 writes: megabytes.
        assert grown > 2 << 20, grown
    finally:
        api.clear_recordings()


FAST = """
def main(n):
    t = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
    total = 0
    for i in range(n):
        a, b, c, d, e, f, g, h, j, k = t
        a, b, c, d, e, f, g, h, j, k = t
        a, b, c, d, e, f, g, h, j, k = t
        a, b, c, d, e, f, g, h, j, k = t
        total += a + k
    return total


print(main(1_000_000))
"""


def test_a_program_recording_faster_than_the_file_is_written_waits_for_the_writer(tmp_path):
    # 42 M bindings in about a second: more entries a second than the file writer saves. The
    # unsaved ones piled up to the limit and recording stopped (15 M of 42 M entries at 256 MiB,
    # like pyperformance's unpack_sequence at 4 GiB); past half the limit with a backlog of an
    # eighth of it, the program now waits for the writer, and the whole run is saved within it.
    (tmp_path / "prog.py").write_text(FAST)
    limit = 256
    peak, r = run_measured([*SQUALL, "run", "--memory-limit", str(limit), "-o", "rec.sqrec", "prog.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "11000000\n"
    assert "memory limit" not in r.stderr, r.stderr
    import squall

    info = squall.load(tmp_path / "rec.sqrec").info()
    assert info["completed"], info["cut_short"]
    assert info["entries"] == info["stats"]["entries"] == 42_000_005, info
    plain, _ = run_measured([sys.executable, "prog.py"], tmp_path)
    assert peak - plain <= limit * 1.1, (peak, plain)
