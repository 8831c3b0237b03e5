"""``goto_line``: when a line ran, first, next from an idx, or previous (the DAP adapter's line
breakpoints and gotoTargets ask it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import squall

PROGRAM = Path(__file__).resolve().parent / "dap" / "programs" / "stepping.py"


def _line(text: str) -> int:
    return next(n for n, src in enumerate(PROGRAM.read_text().splitlines(), 1) if text in src)


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    out = tmp_path_factory.mktemp("goto") / "run.sqrec"
    subprocess.run(
        [sys.executable, "-m", "squall", "run", "-q", "-o", str(out), str(PROGRAM)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return squall.load(str(out))


def test_goto_line_first_next_and_previous_run(rec):
    (tid,) = rec.all_flows()[0]
    line = _line("result = w * h")
    first = rec.goto_line(str(PROGRAM), line, thread_id=tid)
    assert first["type"] == "bind" and first["symbol"] == "result" and first["coord"][0] == line
    again = rec.goto_line(str(PROGRAM), line, thread_id=tid, from_idx=first["idx"])
    assert again["idx"] == first["idx"]  # from_idx is inclusive
    second = rec.goto_line(str(PROGRAM), line, thread_id=tid, from_idx=first["idx"] + 1)
    assert second["idx"] > first["idx"] and second["coord"][0] == line
    assert rec.goto_line(str(PROGRAM), line, thread_id=tid, from_idx=second["idx"] + 1) is None
    back = rec.goto_line(str(PROGRAM), line, thread_id=tid, from_idx=second["idx"] - 1, backward=True)
    assert back["idx"] == first["idx"]
    assert rec.goto_line(str(PROGRAM), line, thread_id=tid, from_idx=first["idx"] - 1, backward=True) is None
    # A def line: the calls of the function.
    call = rec.goto_line("stepping.py", _line("def area"), thread_id=tid)
    assert call["type"] == "fn-call" and call["fn_name"] == "area"
