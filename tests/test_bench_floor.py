"""bench/pyperf/floor_one.py runs a benchmark rewritten by squall with recording off: the price
of the entry points' calls by themselves (run.py --floor)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPERF = ROOT / "bench" / "pyperf"
SQUALL = os.path.join(os.path.dirname(sys.executable), "squall")


def _result(stdout: str) -> dict:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("PYPERF-RESULT "))
    return json.loads(line.split(" ", 1)[1])


def test_the_floor_runs_the_rewritten_benchmark_to_the_same_result_recording_nothing(tmp_path):
    plain = subprocess.run(
        [sys.executable, str(PYPERF / "bench_one.py"), "nqueens"], capture_output=True, text=True, timeout=300
    )
    floor = subprocess.run(
        [SQUALL, "run", "--mode", "full", "--no-save", str(PYPERF / "floor_one.py"), "nqueens"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "SQUALL_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert plain.returncode == 0 and floor.returncode == 0, floor.stderr[-2000:]
    assert _result(floor.stdout)["result"] == _result(plain.stdout)["result"]
    assert "total entries: 0" in floor.stderr, floor.stderr[-2000:]
    # The benchmark went through the rewrite: the code cache holds the rewritten floor_one.py
    # (the script) and benchmarks/bm_nqueens.py (bench_one.py is run by path, not imported).
    cached = [p.name for p in (tmp_path / "cache").rglob("*.bin")]
    assert len(cached) == 2, cached


def test_run_py_floor_adds_both_modes_with_recording_off():
    sys.path.insert(0, str(PYPERF))
    try:
        import run  # noqa: PLC0415 - bench/pyperf is not a package

        chosen = run.variants(peers=False, pyttd_python=None, object_depth=None, floor=True)
    finally:
        sys.path.remove(str(PYPERF))
    floors = [v for v in chosen if v.key.startswith("floor-")]
    assert [v.key for v in floors] == ["floor-full", "floor-calls"]
    argv = floors[0].argv("nqueens", 1, "/tmp/unused")
    assert argv[1:5] == ["run", "--mode", "full", "--no-save"]
    assert argv[-3:] == [str(PYPERF / "floor_one.py"), "nqueens", "1"]
    assert all(v.baseline == "plain" and not v.squall for v in floors)


def test_run_py_reports_a_recording_stopped_by_the_memory_limit_as_a_lower_bound(tmp_path):
    # unpack_sequence in full mode passed the default 4 GiB limit and was reported as an ok
    # ratio although most of its work went unrecorded.
    sys.path.insert(0, str(PYPERF))
    try:
        import run  # noqa: PLC0415 - bench/pyperf is not a package
    finally:
        sys.path.remove(str(PYPERF))
    limited = run.Variant(
        "full",
        "squall full",
        lambda n, s, out: (
            [SQUALL, "run", "--mode", "full", "--memory-limit", "1", "-o", out + ".sqrec"] + run.script(n, s)
        ),
        squall=True,
    )
    got = run.run_once(limited, "nqueens", 1, 300, str(tmp_path))
    assert got.status == "memory limit", (got.status, got.error)
    assert got.work_s is not None and got.entries
    assert "limit=memory_limit" in got.error
    cell = run.summarise([got])
    assert cell.status == "memory limit" and cell.work_s == got.work_s
    plain = run.Cell(status="ok", work_s=got.work_s / 2, proc_s=got.proc_s / 2)
    totals = run.totals({"nqueens": {"plain": plain, "full": cell}}, limited)
    assert totals["geomean_work"] is None and totals["finished"] == 0
    assert totals["geomean_work_with_timeouts"] == 2.0 and totals["over_4x"] == 1
