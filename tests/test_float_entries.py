"""Floats held in entries (issue 11): a return, expression or binding whose value is an exact
``float`` keeps the float in its entry, with no value-store node (``squall_trace::entry``). Every
reader sees the value it saw when a node held it: NaN, -0.0 and the infinities included, live
and from a file, and a version 4 file (floats as nodes) still opens with its floats.
"""

import math
import os
import struct
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import squall
from squall import _engine, api, indexes
from squall._instrument import rewrite

HERE = Path(__file__).resolve().parent
SQUALL = Path(sys.executable).parent / "squall"
V4_FIXTURE = HERE.parent / "crates" / "squall_store" / "tests" / "fixtures" / "v4_floats.sqrec"

ROUNDS = 200

PROGRAM = textwrap.dedent(
    f"""
    def scale(x):
        y = x * 2.0
        z = -y * 0.0
        big = y * 1e308 * 10
        n = big - big
        return y + 0.5


    def main():
        total = 0.0
        for _ in range({ROUNDS}):
            total = total + scale(1.25)
        return total


    main()
    """
)


def _scale_binds():
    """What each binding of one ``scale`` call holds, in order, computed as the program does
    (``inf - inf`` is a NaN with its sign bit set on x86)."""
    y = 1.25 * 2.0
    big = y * 1e308 * 10
    return [("y", y), ("z", -y * 0.0), ("big", big), ("n", big - big)]


SCALE_BINDS = _scale_binds()


def same(a, b):
    """Equal as recorded: the same float bit for bit (NaN is itself, -0.0 is not 0.0)."""
    return type(a) is type(b) is float and struct.pack("<d", a) == struct.pack("<d", b)


def check(rec, entries, deref):
    """The bindings, expressions and returns of ``scale`` read back as the floats computed."""
    binds = [(e["symbol"], deref(e["value_ref"])) for e in entries if e["type"] == "bind" and e["symbol"] != "_"]
    scale_binds = [b for b in binds if b[0] in dict(SCALE_BINDS)]
    assert len(scale_binds) == ROUNDS * len(SCALE_BINDS)
    for got, want in zip(scale_binds, SCALE_BINDS * ROUNDS):
        assert got[0] == want[0] and same(got[1], want[1]), (got, want)
    totals = [v for s, v in binds if s == "total"]
    assert totals[0] == 0.0 and totals[-1] == ROUNDS * 3.0
    returns = [deref(e["result_ref"]) for e in entries if e["type"] == "fn-return" and e.get("result_ref")]
    assert returns.count(3.0) == ROUNDS and returns[-1] == ROUNDS * 3.0
    exprs = [deref(e["result_ref"]) for e in entries if e["type"] == "expr"]
    assert any(same(v, -2.5) for v in exprs) and any(same(v, 2.5e308) for v in exprs)
    # The printers print what `repr` prints.
    for e in entries:
        if e["type"] == "bind" and e["symbol"] in ("z", "big", "n"):
            want = {"z": "-0.0", "big": "inf", "n": "nan"}[e["symbol"]]
            assert rec.val_pprint(e["value_ref"]) == want


def recorded_live(tmp_path):
    path = tmp_path / "floats_live.py"
    path.write_text(PROGRAM, encoding="utf-8")
    mod = types.ModuleType("floats_live")
    sys.modules[mod.__name__] = mod
    code = rewrite.compile_instrumented(PROGRAM, str(path), mod.__name__)
    api.clear_recordings()
    api.start_recording(install_hook=False)
    try:
        exec(code, mod.__dict__)
    finally:
        api.stop_recording()
    flow = _engine.current_flow()
    (tid,) = _engine.live().all_flows()[flow]
    n = _engine.live().timeline_len(flow, tid)
    return flow, tid, [_engine.live().entry(flow, tid, i) for i in range(n)]


def test_floats_read_back_live_without_a_node_each(tmp_path):
    flow, tid, entries = recorded_live(tmp_path)
    check(_engine.live(), entries, _engine.live().deref)
    floats = sum(1 for e in entries if e["type"] in ("bind", "expr", "fn-return"))
    assert floats > 5 * ROUNDS
    # One node per float recorded was ~1,800 here; the entries hold them now (the few nodes
    # left: the functions bound, the argument 1.25 of each call).
    assert _engine.engine_stats()["values"] < ROUNDS + 20
    # Frame locals as of the last entry of a `scale` call: the floats, through `bindings`.
    last_scale_ret = max(
        e["idx"] for e in entries if e["type"] == "fn-return" and _engine.live().deref(e["result_ref"]) == 3.0
    )
    got = {b["symbol"]: _engine.live().deref(b["value_ref"]) for b in indexes.bindings(flow, tid, last_scale_ret)}
    assert [(k, got[k]) for k, _ in SCALE_BINDS] == SCALE_BINDS[:3] + [("n", got["n"])]
    assert same(got["z"], -0.0) and same(got["n"], SCALE_BINDS[3][1])


def test_floats_read_back_from_a_file_as_live(tmp_path):
    prog = tmp_path / "floats_file.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    out = tmp_path / "floats.sqrec"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run(
        [str(SQUALL), "run", "--no-summary", "--mode", "full", "-o", str(out), str(prog)],
        check=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    rec = squall.load(str(out))
    (flow,) = rec.all_flows()
    (tid,) = rec.all_flows()[flow]
    entries = [rec.timeline_entry(flow, tid, i, "at") for i in range(rec.timeline_count(flow, tid))]
    check(rec, entries, rec.deref_val_id)
    assert rec.info()["stats"]["values"] < ROUNDS + 20
    # `squall query calls` prints the floats a call returned.
    text = subprocess.run(
        [str(SQUALL), "query", str(out), "calls", "scale", "--limit", "1"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "3.0" in text, text


def test_a_version_4_file_opens_with_its_floats():
    rec = squall.load(str(V4_FIXTURE))
    assert rec.info()["completed"]
    (flow,) = rec.all_flows()
    (tid,) = rec.all_flows()[flow]
    entries = [rec.timeline_entry(flow, tid, i, "at") for i in range(rec.timeline_count(flow, tid))]
    binds = [(e["symbol"], rec.deref_val_id(e["value_ref"])) for e in entries if e["type"] == "bind"]
    want = [("y", 2.5), ("z", -0.0), ("n", math.nan), ("i", math.inf)]
    got = [b for b in binds if b[0] in dict(want)]
    assert len(got) == len(want) and all(g[0] == w[0] and same(g[1], w[1]) for g, w in zip(got, want)), got
    returns = [rec.deref_val_id(e["result_ref"]) for e in entries if e["type"] == "fn-return"]
    assert 3.0 in returns
