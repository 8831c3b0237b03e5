"""An object's history and locals in their latest recorded state (issue 11, items 2 and 3).

``history_programs/mutate.py`` binds a list, a dict and an object, changes each and passes it to
``show`` (which records it again). Recorded in this process (live) and by ``squall run -o``
(file), both must answer the same: the history of each object lists its states in order with
the idx that recorded them, and the locals at the last binding show the changed states with the
idx they are from, in the Python API and in ``squall query``.
"""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest
import squall
from squall import api, indexes
from squall._instrument import rewrite
from test_values_as_recorded import SQUALL, _run

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "history_programs" / "mutate.py"

#: What every frontend must show: per local, (preview, the idx its shown state is from or None).
LOCALS_AT_DONE = {
    "basket": ("[1, 2, 3]", 6),
    "prices": ("{'pen': 1, 'ink': 2}", 11),
    "cart": ("Cart#(total=9)", 19),
    "done": ("True", None),
}


def _anon(text: str) -> str:
    """Identities depend on the run: ``Cart#3`` -> ``Cart#``."""
    return re.sub(r"#\d+", "#", text)


@pytest.fixture(scope="module")
def live():
    api.stop_recording()
    api.clear_recordings()
    api.set_flow(0)
    api.start_recording(install_hook=False)
    mod = types.ModuleType("hp_mutate")
    mod.__file__ = str(PROGRAM)
    sys.modules[mod.__name__] = mod
    try:
        exec(
            rewrite.compile_instrumented(PROGRAM.read_text(encoding="utf-8"), str(PROGRAM), mod.__name__, mode="full"),
            mod.__dict__,
        )
        mod.main()
    finally:
        api.stop_recording()
    yield indexes._live
    api.clear_recordings()
    sys.modules.pop(mod.__name__, None)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("history") / "mutate.sqrec"
    r = _run([SQUALL, "run", "--no-summary", "--mode", "full", "-o", out, PROGRAM])
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module", params=["live", "file"])
def q(request, live, saved):
    return live if request.param == "live" else squall.load(saved)


def _main_thread(q) -> int:
    (tid,) = q.all_flows()[0]
    return tid


def _done_idx(q, tid: int) -> int:
    (idx,) = [e["idx"] for e in q.get_referenced_maps_timeline(0, tid) if e["type"] == "bind" and e["symbol"] == "done"]
    return idx


def _pv(q, b: dict) -> str:
    from squall import agent

    return _anon(agent.preview(q._b.deref(b["value_ref"])))


def test_bindings_show_the_latest_state_and_its_idx(q):
    tid = _main_thread(q)
    at = _done_idx(q, tid)
    assert at == 22
    got = {b["symbol"]: (_pv(q, b), b.get("state_idx")) for b in q.bindings(0, tid, at)}
    assert got == LOCALS_AT_DONE
    # Before the list changed and was recorded again, it shows as bound.
    early = {b["symbol"]: (_pv(q, b), b.get("state_idx")) for b in q.bindings(0, tid, 5)}
    assert early == {"basket": ("[1, 2]", None)}


def test_frame_data_shows_the_latest_state(q):
    tid = _main_thread(q)
    fd = q._b.frame_data(0, tid, 22)
    got = {b["symbol"]: (_pv(q, b), b.get("state_idx")) for b in fd["bindings"]}
    assert got == LOCALS_AT_DONE


def _obj_id(q, tid: int, symbol: str) -> int:
    (b,) = [b for b in q.bindings(0, tid, 22) if b["symbol"] == symbol]
    return q._b.deref(b["value_ref"]).obj_id if symbol == "cart" else _id_of_container(q, b)


def _id_of_container(q, b: dict) -> int:
    # Builtin containers deref as themselves; their identity is in the preview text of history.
    for obj in range(1, 20):
        states = q.history(obj, flow_id=0)
        if states and states[-1]["value_ref"] == b["value_ref"]:
            return obj
    raise AssertionError(f"no object has the state {b}")


def test_history_lists_states_in_order(q):
    """States, and the writes to the object between them (what changed, and the object as of
    that write: its last state with the writes since applied)."""
    tid = _main_thread(q)
    hist = {
        sym: [(s["kind"], s["idx"], _anon(s["preview"])) for s in q.history(_obj_id(q, tid, sym), flow_id=0)]
        for sym in ("basket", "prices", "cart")
    }
    assert hist == {
        "basket": [("state", 1, "[1, 2]"), ("state", 6, "[1, 2, 3]")],
        "prices": [
            ("state", 9, "{'pen': 1}"),
            ("write", 10, "{'pen': 1, 'ink': 2}"),
            ("state", 11, "{'pen': 1, 'ink': 2}"),
        ],
        "cart": [
            ("state", 14, "<Cart#>"),
            ("write", 15, "Cart#(total=0)"),
            ("state", 17, "Cart#(total=0)"),
            ("write", 18, "Cart#(total=9)"),
            ("state", 19, "Cart#(total=9)"),
        ],
    }
    writes = [
        (w["name"], w["is_attr"], w["new_preview"])
        for w in q.history(_obj_id(q, tid, "cart"), flow_id=0)
        if w["kind"] == "write"
    ]
    assert writes == [("total", True, "0"), ("total", True, "9")]
    (ink,) = [w for w in q.history(_obj_id(q, tid, "prices"), flow_id=0) if w["kind"] == "write"]
    assert (ink["name"], ink["is_attr"], ink["new_preview"]) == ("'ink'", False, "2")
    assert q._b.deref(ink["value_ref"]) == {"pen": 1, "ink": 2}
    assert q.history(_obj_id(q, tid, "basket"), flow_id=0, thread_id=tid) == q.history(_obj_id(q, tid, "basket"))
    assert q.history(0) == []


def test_locals_at_a_write_show_it_applied(q):
    """At `cart.total = 9` (idx 18) `cart`'s last recorded state (idx 17) says total=0: the write
    is applied, and the state is marked as of that write (`state_idx`), with `writes_applied`.
    Inside `Cart.__init__` after `self.total = 0`, `self` (recorded bare at the call) has it."""
    tid = _main_thread(q)
    at_write = {b["symbol"]: (_pv(q, b), b.get("state_idx"), b.get("writes_applied")) for b in q.bindings(0, tid, 18)}
    assert at_write["cart"] == ("Cart#(total=9)", 18, 1)
    assert at_write["prices"] == ("{'pen': 1, 'ink': 2}", 11, None)
    before = {b["symbol"]: (_pv(q, b), b.get("state_idx")) for b in q.bindings(0, tid, 17)}
    assert before["cart"] == ("Cart#(total=0)", None)
    (self_,) = q.bindings(0, tid, 15)
    assert (self_["symbol"], _pv(q, self_), self_["state_idx"], self_["writes_applied"]) == (
        "self",
        "Cart#(total=0)",
        15,
        1,
    )
    fd = q._b.frame_data(0, tid, 18)
    assert {b["symbol"]: _pv(q, b) for b in fd["bindings"]}["cart"] == "Cart#(total=9)"


def test_live_and_file_answer_the_same(live, saved):
    rec = squall.load(saved)
    for q in (live, rec):
        tid = _main_thread(q)
        q.answer = [(b["symbol"], _pv(q, b), b.get("state_idx")) for b in q.bindings(0, tid, 22)]
    assert live.answer == rec.answer


def test_query_text(saved):
    r = _run([SQUALL, "query", saved, "bindings", "22"])
    assert r.returncode == 0, r.stderr
    assert "  basket = [1, 2, 3]  (line 14)  (as of idx 6)" in r.stdout
    assert "  done = True  (line 24)\n" in r.stdout
    r = _run([SQUALL, "query", saved, "history", "1"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "2 recorded state(s) of object #1 in flow 0 (all threads, in recorded order):"
    assert lines[1].split()[:2] == ["idx", "1"] and lines[1].endswith("[1, 2]")
    assert lines[2].split()[:2] == ["idx", "6"] and lines[2].endswith("[1, 2, 3]")
    r = _run([SQUALL, "query", saved, "history", "1", "--limit", "1", "--json"])
    d = json.loads(r.stdout)
    assert (d["states"], d["shown"], d["left_out"]) == (2, 1, 1)
    assert d["history"][0]["value"] == "[1, 2, 3]"
    r = _run([SQUALL, "query", saved, "bindings", "18"])
    assert "  cart = Cart#3(total=9)  (line 21)  (as of idx 18: 1 write applied to its last recorded state)" in r.stdout
    r = _run([SQUALL, "query", saved, "history", "3"])
    lines = r.stdout.splitlines()
    assert lines[0] == "3 recorded state(s) and 2 write(s) of object #3 in flow 0 (all threads, in recorded order):"
    assert lines[2].split()[:2] == ["idx", "15"] and lines[2].endswith("write .total = 0  -> Cart#3(total=0)")
    assert lines[4].split()[:2] == ["idx", "18"] and lines[4].endswith("write .total = 9  -> Cart#3(total=9)")


def test_the_ui_locals_apply_writes_too(saved):
    """The UI's frame route shows `cart` at `cart.total = 9` with the write applied, marked."""
    import urllib.request

    from squall import _engine

    url = _engine.serve_file(str(saved), "127.0.0.1", 0)
    base, token = url.split("?token=")
    with urllib.request.urlopen(f"{base.rstrip('/')}/api/frame?token={token}&tl=0&idx=18", timeout=30) as r:
        frame = json.loads(r.read())
    (cart,) = [b for b in frame["bindings"] if b["symbol"] == "cart"]
    assert (_anon(cart["value"]["preview"]), cart["state_idx"], cart["writes_applied"]) == ("Cart#(total=9)", 18, 1)
