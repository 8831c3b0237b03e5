"""Objects past the recording's ``object_depth`` (issue 11, values as they were, at a bounded cost).

``reference_programs/deep.py`` records ``root -> mid -> leaf`` several times while ``leaf``
changes. ``mid`` (a field of the recorded value) is always encoded as it is; ``leaf`` once known
is a reference, shown with its newest state recorded *before* the entry, marked as earlier
(``values.Earlier``, ``(earlier)`` in previews). Never a later state: ``leaf.name = "LEAF"``
happens after the third ``show(root)``, and no entry before ``show(leaf)`` shows it. Live and
file answer alike; a cycle is shown once.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import squall
from squall import api, indexes, values
from squall._instrument import rewrite
from test_values_as_recorded import SQUALL, _run

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "reference_programs" / "deep.py"


def _shows(q, deref, ns):
    """The derefed ``node`` argument of every ``show`` call, in order."""
    out = []
    for tid in q.all_flows().get(0, []):
        for e in q.get_referenced_maps_timeline(0, tid):
            if e["type"] == "fn-call" and e["fn_name"] == "show" and e["fn_ns"] == ns:
                out.append(deref(e["fn_args_ref"])[0])
    return out


def _live(program=PROGRAM, collect=None):
    """The ``show`` arguments of ``program`` recorded in this process (module ``ref_<stem>``),
    or what ``collect(query, deref)`` makes of the recording."""
    api.stop_recording()
    api.clear_recordings()
    api.set_flow(0)
    api.start_recording(install_hook=False)
    mod = types.ModuleType(f"ref_{program.stem}")
    mod.__file__ = str(program)
    sys.modules[mod.__name__] = mod
    try:
        exec(
            rewrite.compile_instrumented(program.read_text(encoding="utf-8"), str(program), mod.__name__, mode="full"),
            mod.__dict__,
        )
    finally:
        api.stop_recording()
        sys.modules.pop(mod.__name__, None)
    try:
        if collect is not None:
            return collect(indexes._live, values.deref_val_id)
        return _shows(indexes._live, values.deref_val_id, mod.__name__)
    finally:
        api.clear_recordings()


def _saved(tmp_path, program=PROGRAM):
    """``squall run -o`` of ``program``: the file."""
    out = tmp_path / f"{program.stem}.sqrec"
    r = _run([SQUALL, "run", "--no-summary", "--mode", "full", "-o", out, program])
    assert r.returncode == 0, r.stderr
    return out


def _file(tmp_path, program=PROGRAM):
    """The ``show`` arguments of ``program`` read back from its recording file."""
    rec = squall.load(_saved(tmp_path, program))
    return _shows(rec, rec.deref_val_id, "__main__")


@pytest.fixture(params=["live", "file"])
def shows(request, tmp_path):
    return _live() if request.param == "live" else _file(tmp_path)


def _names(v, earlier=False, out=None):
    """(name, shown as an earlier state?) of every Node in a derefed value, outermost first."""
    out = [] if out is None else out
    if isinstance(v, values.Earlier):
        return _names(v.value, True, out)
    if isinstance(v, values.ObjectSnapshot) and "name" in v.attrs:
        out.append((v.name, earlier))
        for k in ("child", "peer"):
            _names(v.attrs.get(k), earlier, out)
    return out


def test_the_recorded_value_is_as_it_is_and_its_fields_are_marked_when_earlier(shows):
    for root in shows[:3]:
        assert isinstance(root, values.ObjectSnapshot) and root.name == "root"
        mid = root.child
        # mid was recorded before (writes in its __init__): a reference past object_depth 1.
        assert isinstance(mid, values.Earlier), mid
        assert repr(mid).startswith("(earlier) Node#")
        assert mid.name == "mid"


def _earlier_states_shown(q, deref, ns):
    """(call idx, an earlier state shown in its argument, the idxs of that object's recorded
    changes) for every ``values.Earlier`` in the argument of every ``show`` call."""
    out = []
    for tid in q.all_flows().get(0, []):
        for e in q.get_referenced_maps_timeline(0, tid):
            if e["type"] == "fn-call" and e["fn_name"] == "show" and e["fn_ns"] == ns:
                for earlier in _earliers(deref(e["fn_args_ref"])[0], []):
                    changes = [c["idx"] for c in q.history(earlier.obj_id, 0, tid) if c["idx"] is not None]
                    out.append((e["idx"], earlier, changes))
    return out


def _earliers(v, out):
    """Every ``values.Earlier`` inside a derefed value."""
    if isinstance(v, values.Earlier):
        out.append(v)
        v = v.value
    if isinstance(v, values.ObjectSnapshot):
        for k in ("child", "peer"):
            _earliers(v.attrs.get(k), out)
    return out


@pytest.mark.parametrize("front", ["live", "file"])
def test_an_earlier_state_says_which_entry_it_is_from(front, tmp_path):
    """``Earlier.idx`` is the newest change of the object (a recorded state, or a write applied
    to it) recorded before the entry that shows it: the reader can go there."""
    if front == "live":
        shown = _live(collect=lambda q, deref: _earlier_states_shown(q, deref, "ref_deep"))
    else:
        rec = squall.load(_saved(tmp_path))
        shown = _earlier_states_shown(rec, rec.deref_val_id, "__main__")
    checked = 0
    for idx, earlier, changes in shown:
        before = [c for c in changes if c < idx]
        assert before, (idx, earlier)
        assert earlier.idx == max(before), (idx, earlier, earlier.idx, changes)
        checked += 1
    assert checked >= 4, checked


def test_no_entry_shows_a_later_state(shows):
    # leaf.name = "LEAF" runs after the second show(root).
    for root in shows[:2]:
        assert all(name != "LEAF" for name, _ in _names(root)), _names(root)
    # After it, an unmarked value is as it is; a stale one ("leaf") is marked as earlier.
    for root in shows[2:5]:
        for name, earlier in _names(root):
            if name == "leaf":
                assert earlier, _names(root)
    assert shows[3].name == "LEAF"  # show(leaf) recorded it itself


def _deeper(depth):
    before = values.get_snapshot_budget()
    values.set_snapshot_budget(object_depth=depth)
    try:
        return _live()
    finally:
        values.set_snapshot_budget(**before)
        assert values.get_snapshot_budget() == before


def test_a_deeper_object_depth_shows_every_level_as_it_is():
    shows = _deeper(3)
    assert _names(shows[0]) == [("root", False), ("mid", False), ("leaf", False)]
    assert _names(shows[2]) == [("root", False), ("mid", False), ("LEAF", False)]


def test_a_cycle_is_shown_once():
    a = _deeper(3)[5]
    assert a.name == "a"
    b = a.peer
    assert isinstance(b, values.ObjectSnapshot) and b.name == "b"
    back = b.peer
    assert isinstance(back, values.Truncated) and back.obj_id == a.obj_id, back


def test_previews_mark_earlier_states(tmp_path):
    r = _run([SQUALL, "query", _saved(tmp_path), "calls", "show"])
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "show(node=" in ln]
    assert "child=(earlier) Node#" in lines[0], lines[0]
    assert "LEAF" not in "".join(lines[:2])


def _written(front, tmp_path):
    program = HERE / "reference_programs" / "written.py"
    return _file(tmp_path, program) if front == "file" else _live(program)


@pytest.mark.parametrize("front", ["live", "file"])
def test_an_earlier_state_has_the_writes_made_since(front, tmp_path):
    first, second, third, fourth = _written(front, tmp_path)
    assert isinstance(first.peer, values.Earlier) and first.peer.name == "b"
    peer = second.peer
    assert isinstance(peer, values.Earlier), peer  # still marked: other code may have changed it
    assert peer.name == "B"
    assert first.peer.name == "b"  # the first entry is unchanged by the later write
    assert "name" not in third.peer.value.attrs
    # The value recorded for a is equal to the one before, but is not that entry's value: the
    # write since is shown (a value reused from an earlier entry would resolve as of then).
    assert fourth.peer.name == "C"


def _object_depth_0(front, tmp_path):
    if front == "live":
        return _deeper(0)
    out = tmp_path / "deep0.sqrec"
    r = _run([SQUALL, "run", "--no-summary", "--mode", "full", "--object-depth", "0", "-o", out, PROGRAM])
    assert r.returncode == 0, r.stderr
    rec = squall.load(out)
    return _shows(rec, rec.deref_val_id, "__main__")


@pytest.mark.parametrize("front", ["live", "file"])
def test_object_depth_0_records_known_values_as_references_with_the_writes_since(front, tmp_path):
    shows = _object_depth_0(front, tmp_path)
    # Every `show` argument was bound before: a reference, shown as its earlier state.
    assert all(isinstance(s, values.Earlier) for s in shows), shows
    assert [name for name, _ in _names(shows[1])] == ["root", "mid", "leaf"]
    # `leaf.name = "LEAF"` ran between the second and the third show: applied to the states
    # shown from the third on, never before.
    assert [name for name, _ in _names(shows[2])] == ["root", "mid", "LEAF"]
    assert shows[3].name == "LEAF"
    # `b.peer = a` ran after b's state was recorded: shown, and the cycle back to a once.
    b = shows[5].peer
    assert isinstance(b, values.Earlier) and b.name == "b"
    assert isinstance(b.peer, values.Truncated) and b.peer.obj_id == shows[5].obj_id, b.peer


@pytest.mark.parametrize("depth", [None, "0", "2"])
def test_a_file_says_the_object_depth_it_was_recorded_at(depth, tmp_path):
    """An agent reading a file learns which values may show an earlier state: `squall info`
    and the summary (MCP's first call) give the object depth the program was recorded at."""
    out = tmp_path / "depth.sqrec"
    extra = [] if depth is None else ["--object-depth", depth]
    r = _run([SQUALL, "run", "--no-summary", *extra, "-o", out, PROGRAM])
    assert r.returncode == 0, r.stderr
    expected = 1 if depth is None else int(depth)
    info = _run([SQUALL, "info", out])
    assert info.returncode == 0, info.stderr
    assert f"objects    read afresh to depth {expected} (--object-depth;" in info.stdout, info.stdout
    summary = _run([SQUALL, "query", out, "summary"])
    assert f"objects read afresh to depth {expected}; deeper ones" in summary.stdout, summary.stdout
    from squall import agent  # noqa: PLC0415

    assert agent.summary(squall.load(out))["object_depth"] == expected


def test_object_depth_must_be_a_non_negative_int(tmp_path):
    r = _run([SQUALL, "run", "--object-depth", "-1", PROGRAM])
    assert r.returncode == 2
    assert "--object-depth: expected an integer 0 or more, got `-1`" in r.stderr


def test_the_value_tree_and_the_ui_api_give_an_earlier_states_entry(tmp_path):
    """The value tree (the DAP server's variables) and the UI's ``/api/value`` name the entry an
    earlier state is as of, as ``Earlier.idx`` does."""
    import json
    import urllib.request

    from squall._engine import serve_file

    path = _saved(tmp_path)
    rec = squall.load(path)
    call = next(
        e
        for e in rec.get_referenced_maps_timeline(0, rec.all_flows()[0][0])
        if e["type"] == "fn-call" and e["fn_name"] == "show"
    )
    (arg_ref,) = rec._b.arg_refs(call["fn_args_ref"])
    want = rec.deref_val_id(call["fn_args_ref"])[0].child.idx
    assert want is not None and want < call["idx"]
    tree = rec.val_expand(arg_ref, (), 0, None)
    (child,) = [c for c in tree["children"] if c["key"] == "child"]
    assert child["earlier"] and child["earlier_idx"] == want, child
    assert not tree["earlier"] and tree["earlier_idx"] is None
    url = serve_file(str(path), "127.0.0.1", 0)
    base, token = url.split("?token=")
    query = f"token={token}&tl=0&v={arg_ref}"
    with urllib.request.urlopen(f"{base.rstrip('/')}/api/value?{query}", timeout=30) as r:
        page = json.loads(r.read())
    (child,) = [c for c in page["children"] if c["key"] == "child"]
    assert child["earlier"] and child["earlier_idx"] == want, child


def _expr_values(q, deref):
    """The derefed values of the ``holder[0]`` expression of ``expr_objects.py``."""
    program = HERE / "reference_programs" / "expr_objects.py"
    lines = program.read_text(encoding="utf-8").splitlines()
    out = []
    for tid in q.all_flows().get(0, []):
        for e in q.get_referenced_maps_timeline(0, tid):
            line, col, end_line, end_col = e.get("coord") or (0, 0, 0, 0)
            if e["type"] == "expr" and line == end_line and lines[line - 1][col:end_col] == "holder[0]":
                out.append(deref(e["result_ref"]))
    return out


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_an_expressions_object_is_read_one_level_less_than_an_argument(depth):
    """At the default depth (1) an expression's object recorded before is a reference to that
    state (``values.Earlier``); at 2 it is read afresh, as an argument is at 1."""
    before = values.get_snapshot_budget()
    values.set_snapshot_budget(object_depth=depth)
    try:
        (box,) = _live(HERE / "reference_programs" / "expr_objects.py", _expr_values)
    finally:
        values.set_snapshot_budget(**before)
    assert box.v == 1 and box.type_name.endswith("Box")
    assert isinstance(box, values.Earlier) == (depth < 2), box
