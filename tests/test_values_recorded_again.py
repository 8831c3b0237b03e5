"""An unchanged value recorded again shows the objects it refers to as of that record.

``reference_programs/recorded_again.py`` passes a box holding a leaf to ``show``, renames the
leaf (recorded: ``show(leaf)``), and passes the unchanged box again. The recorder reuses the
box's earlier node and names it again (``Node::Same``, file format 6) instead of proving that
no referenced object changed since: the second ``show`` must show the leaf renamed (an earlier
state, the newest before that entry), not the leaf as of the first record, and the locals at
the end show the box with the write made to it after it was last recorded. Live and file, the
Python API and ``squall query`` alike.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest
import squall
from squall import agent, api, indexes
from squall._instrument import rewrite
from test_values_as_recorded import SQUALL, _run

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "reference_programs" / "recorded_again.py"
#: ``squall run --mode full`` of PROGRAM by the last engine that wrote format version 5 (547149f),
#: which made a new node where this one names an earlier one again.
V5_FIXTURE = HERE.parent / "crates" / "squall_store" / "tests" / "fixtures" / "v5_recorded_again.sqrec"


def _anon(text: str) -> str:
    return re.sub(r"#\d+", "#", text)


def _answers(q, deref):
    """The previews of every ``show`` argument, and of the locals at the end of ``main``."""
    (tid,) = q.all_flows()[0]
    entries = q.get_referenced_maps_timeline(0, tid)
    shows = [
        _anon(agent.preview(deref(e["fn_args_ref"])[0]))
        for e in entries
        if e["type"] == "fn-call" and e["fn_name"] == "show"
    ]
    (done,) = [e["idx"] for e in entries if e["type"] == "bind" and e["symbol"] == "done"]
    local = {b["symbol"]: _anon(agent.preview(deref(b["value_ref"]))) for b in q.bindings(0, tid, done)}
    return shows, local


def _live():
    api.stop_recording()
    api.clear_recordings()
    api.set_flow(0)
    api.start_recording(install_hook=False)
    mod = types.ModuleType("ra_recorded_again")
    mod.__file__ = str(PROGRAM)
    sys.modules[mod.__name__] = mod
    try:
        source = PROGRAM.read_text(encoding="utf-8")
        exec(rewrite.compile_instrumented(source, str(PROGRAM), mod.__name__, mode="full"), mod.__dict__)
    finally:
        api.stop_recording()
        sys.modules.pop(mod.__name__, None)
    try:
        return _answers(indexes._live, indexes._live._b.deref)
    finally:
        api.clear_recordings()


def _saved(tmp_path):
    out = tmp_path / "recorded_again.sqrec"
    r = _run([SQUALL, "run", "--no-summary", "--mode", "full", "-o", out, PROGRAM])
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("front", ["live", "file", "version 5 file"])
def test_a_value_recorded_again_shows_its_references_as_of_that_record(front, tmp_path):
    if front == "live":
        shows, local = _live()
    else:
        rec = squall.load(_saved(tmp_path) if front == "file" else V5_FIXTURE)
        shows, local = _answers(rec, rec._b.deref)
    assert shows == [
        "Box#(leaf=(earlier) Leaf#(n=1), size=1)",
        "Leaf#(n=2)",
        "Box#(leaf=(earlier) Leaf#(n=2), size=1)",
    ]
    # `again = box; again.size = 5`: both names show the write, and the leaf as renamed.
    assert local["box"] == local["again"] == "Box#(leaf=(earlier) Leaf#(n=2), size=5)"


def test_query_shows_a_value_recorded_again_as_of_that_record(tmp_path):
    saved = _saved(tmp_path)
    r = _run([SQUALL, "query", saved, "calls", "show"])
    assert r.returncode == 0, r.stderr
    lines = [_anon(line.split("__main__.show", 1)[1]) for line in r.stdout.splitlines() if "__main__.show(" in line]
    assert lines[2] == "(x=Box#(leaf=(earlier) Leaf#(n=2), size=1)) -> 0"
    r = _run([SQUALL, "query", saved, "frames", "main"])
    assert r.returncode == 0, r.stderr
    assert "    again = Box#(leaf=(earlier) Leaf#(n=2), size=5)" in _anon(r.stdout)
