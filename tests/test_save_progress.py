"""The end-of-run save says what it saves and how long it took, and a 5,000-test suite recorded
with `squall run -m pytest` finishes its save in seconds (issue 11; docs/realworld.md)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import squall

SQUALL = [sys.executable, "-m", "squall"]
SAVE_LINE = re.compile(
    r"^squall: saving ([\d,]+) entries to (.+) \(([\d.]+) MB written while the program ran\); "
    r"writing the rest\.\.\. done in ([\d.]+) s \(([\d.]+) MB\)$",
    re.MULTILINE,
)
ENTRIES = re.compile(r"^total entries: (\d+)", re.MULTILINE)

MANY_ENTRIES = """
def step(total, i):
    return total + i % 7

def main(n):
    total = 0
    for i in range(n):
        total = step(total, i)
    return total

print(main({n}))
"""


def run_squall(tmp_path: Path, n: int, *extra: str) -> subprocess.CompletedProcess:
    prog = tmp_path / "prog.py"
    prog.write_text(MANY_ENTRIES.format(n=n))
    out = tmp_path / "rec.sqrec"
    return subprocess.run(
        [*SQUALL, "run", *extra, "-o", str(out), str(prog)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=tmp_path,
    )


def test_a_big_recording_says_what_it_saves_and_when_it_is_done(tmp_path):
    r = run_squall(tmp_path, 600_000)
    assert r.stdout.strip() == str(sum(i % 7 for i in range(600_000)))
    m = SAVE_LINE.search(r.stderr)
    assert m, r.stderr
    entries = int(ENTRIES.search(r.stderr).group(1))
    assert entries > 2_000_000
    # The line names the entries recorded (the summary's count) and the file, before the summary.
    assert int(m.group(1).replace(",", "")) == entries
    assert m.group(2) == str(tmp_path / "rec.sqrec")
    assert r.stderr.index(m.group(0)) < r.stderr.index("--- squall: recording summary ---")
    # What was written while the program ran is at most what the file holds at the end, which
    # is the file's size.
    before, after = float(m.group(3)), float(m.group(5))
    assert 0 <= before <= after
    assert abs(after - (tmp_path / "rec.sqrec").stat().st_size / 2**20) < 0.06
    assert squall.load(str(tmp_path / "rec.sqrec"), progress=False) is not None


def test_a_small_recording_saves_without_the_line(tmp_path):
    r = run_squall(tmp_path, 1_000)
    assert "squall: saving" not in r.stderr
    assert "recording saved to" in r.stderr


def test_finish_saving_says_it_only_when_asked_or_on_a_terminal(tmp_path):
    """Through the API (a program saving its own recording), nothing is added to a stderr that
    is not a terminal unless progress=True."""
    code = f"""
import sys
from squall import api
from squall._instrument import rewrite
src = {MANY_ENTRIES.format(n=600_000).replace("print(main(", "# ")!r}
ns = {{"__name__": "m"}}
exec(rewrite.compile_instrumented(src, "m.py", "m", mode="full"), ns)
api.start_recording(install_hook=False)
api.save_to({str(tmp_path / "a.sqrec")!r})
ns["main"](600_000)
api.stop_recording()
api.finish_saving(progress=sys.argv[1] == "yes")
"""
    quiet = subprocess.run([sys.executable, "-c", code, "no"], capture_output=True, text=True)
    loud = subprocess.run([sys.executable, "-c", code, "yes"], capture_output=True, text=True)
    assert quiet.returncode == 0 and loud.returncode == 0, quiet.stderr + loud.stderr
    assert quiet.stderr == ""
    assert SAVE_LINE.search(loud.stderr), loud.stderr


def test_a_recorded_5000_test_suite_saves_in_seconds(tmp_path):
    """tests/realworld/make_suite.py's 5,070 tests, recorded whole with `squall run -m pytest`:
    all pass as without squall, and the save after the last test takes seconds."""
    sys.path.insert(0, str(Path(__file__).parent / "realworld"))
    try:
        import make_suite
    finally:
        sys.path.pop(0)
    assert make_suite.make(tmp_path / "suite", 5000) == 5070
    out = tmp_path / "suite.sqrec"
    t0 = time.perf_counter()
    r = subprocess.run(
        [*SQUALL, "run", "-o", str(out), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path / "suite",
    )
    wall = time.perf_counter() - t0
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert re.search(r"^5070 passed", r.stdout, re.MULTILINE), r.stdout[-500:]
    m = SAVE_LINE.search(r.stderr)
    assert m, r.stderr[-2000:]
    assert int(m.group(1).replace(",", "")) > 5_000_000
    save_s = float(m.group(4))
    assert save_s < 10, f"the save took {save_s} s of {wall:.0f} s"
    # The file holds every entry the summary counted, the library's calls among them.
    rec = squall.load(str(out), progress=False)
    threads = rec.all_threads()
    assert sum(rec.timeline_count(f, t) for f, t in threads) == int(ENTRIES.search(r.stderr).group(1))
    calls = {s["fn_ns"] + "." + s["fn_name"]: s["cnt"] for s in rec.fn_call_stats(*threads[0])}
    assert calls["shopkit.Cart.add"] > 5070
