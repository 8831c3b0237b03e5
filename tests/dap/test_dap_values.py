"""The DAP server's variables are the recorded values as the core opens them: the same for the
live recording and a file, and what the UI's value inspector (`/api/value`) shows for the same
value: the same text at the same print bounds, the same children under the same keys.

``programs/mutated.py`` changes an object after it is recorded; the variables at `fill`'s call
and at its return show each state, under the object's one identity (`Basket#N`), its list cut by
the recorder's budget saying so."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

import pytest
import squall
from squall import _engine, api
from squall._instrument import rewrite
from squall.agent_context import _cut
from squall.dap import lifecycle  # noqa: F401 - registers the handlers
from squall.dap.inspect import PREVIEW_CHARS, PRINT_LENGTH, PRINT_LEVEL, frame_local_refs
from squall.dap.session import Session
from squall.recording import live as live_recording
from test_dap_corpus import _ask, _Recorder

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "programs" / "mutated.py"
CUT = "<...50 more of list[150]: cut by squall's snapshot budget>"
ITEMS = f"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ..., {CUT}]"


@pytest.fixture(scope="module")
def file_rec(tmp_path_factory):
    out = tmp_path_factory.mktemp("dapvalues") / "mutated.sqrec"
    r = subprocess.run(
        [sys.executable, "-m", "squall", "run", "-q", "-o", str(out), str(PROGRAM)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), r.stderr
    return squall.load(out)


@pytest.fixture(scope="module")
def live_rec():
    api.stop_recording()
    api.clear_recordings()
    api.set_flow(0)
    api.start_recording(install_hook=False)
    mod = types.ModuleType("__main__")  # named as `squall run` names it: the same type names
    mod.__file__ = str(PROGRAM)
    try:
        code = rewrite.compile_instrumented(PROGRAM.read_text(encoding="utf-8"), str(PROGRAM), "__main__", mode="full")
        exec(code, mod.__dict__)
    finally:
        api.stop_recording()
    yield live_recording()
    api.clear_recordings()


def _session(rec: Any) -> Session:
    s = Session(_Recorder())  # type: ignore[arg-type]
    s.open(rec)
    return s


def _walk(s: Session, ref: int, depth: int) -> List[Dict[str, Any]]:
    out = []
    for v in _ask(s, "variables", variablesReference=ref)["variables"]:
        node = {k: v.get(k) for k in ("name", "value", "type", "evaluateName", "indexedVariables", "namedVariables")}
        if v["variablesReference"] and depth > 0:
            node["children"] = _walk(s, v["variablesReference"], depth - 1)
        out.append(node)
    return out


def _locals_at(s: Session, fn: str, where: str) -> List[Dict[str, Any]]:
    """The Locals scope, two levels deep, at the call of ``fn`` (``where="idx"``) or its exit
    (``"ret_idx"``)."""
    (t,) = s.threads.values()
    call = s.rec.find_fn_call_entry(t.flow_id, t.thread_id, fn_name=fn)
    t.idx = call[where]
    s.last_thread = t
    s.reset_handles()
    frame = _ask(s, "stackTrace", threadId=t.dap_id)["stackFrames"][0]
    (scope,) = [x for x in _ask(s, "scopes", frameId=frame["id"])["scopes"] if x["name"] == "Locals"]
    return _walk(s, scope["variablesReference"], 2)


@pytest.mark.parametrize("which", ["live", "file"])
def test_variables_show_each_recorded_state_under_one_identity(which, request):
    s = _session(request.getfixturevalue(f"{which}_rec"))
    before = {v["name"]: v for v in _locals_at(s, "fill", "idx")}["basket"]
    after = {v["name"]: v for v in _locals_at(s, "fill", "ret_idx")}["basket"]
    ident = re.match(r"Basket#(\d+)\(", before["value"])
    assert ident, before["value"]
    assert before["value"] == f"Basket#{ident[1]}(items={ITEMS}, owner='ann')"
    assert after["value"] == f"Basket#{ident[1]}(items={ITEMS}, owner='bob')"
    assert (before["type"], before["namedVariables"]) == ("__main__.Basket", 2)
    items, owner = before["children"]
    assert (items["name"], items["value"], items["indexedVariables"], items["evaluateName"]) == (
        "items",
        ITEMS,
        100,
        "basket.items",
    )
    assert [c["name"] for c in items["children"]] == [f"[{i}]" for i in range(100)]
    assert (owner["value"], after["children"][1]["value"]) == ("'ann'", "'bob'")


def test_live_and_file_show_the_same_variables(live_rec, file_rec):
    for fn, where in (("fill", "idx"), ("fill", "ret_idx"), ("Basket.__init__", "ret_idx")):
        assert _locals_at(_session(live_rec), fn, where) == _locals_at(_session(file_rec), fn, where), (fn, where)


def _ui_value(url: str, **params: Any) -> Dict[str, Any]:
    base, token = url.split("?token=")
    q = urllib.parse.urlencode(params)
    req = urllib.request.Request(f"{base}api/value?{q}", headers={"x-squall-token": token})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


@pytest.mark.parametrize("program", [PROGRAM, HERE / "programs" / "stepping.py"], ids=lambda p: p.stem)
def test_variables_are_what_the_ui_inspector_shows(program, tmp_path):
    """Every local at every entry, two levels deep: the DAP's text is the UI's `repr` at the
    same print bounds, its type the UI's, its children the UI's children, key for key."""
    out = tmp_path / "run.sqrec"
    subprocess.run([sys.executable, "-m", "squall", "run", "-q", "-o", str(out), str(program)], timeout=120)
    rec = squall.load(out)
    url = _engine.serve_file(str(out))
    s = _session(rec)
    checked = 0

    def same(var: Dict[str, Any], tl: int, v: int, path: List[int], depth: int) -> None:
        nonlocal checked
        ui = _ui_value(
            url, tl=tl, v=v, path=".".join(map(str, path)), level=PRINT_LEVEL, length=PRINT_LENGTH, limit=1000
        )
        assert (var["value"], var["type"]) == (_cut(ui["repr"], PREVIEW_CHARS), ui["type"]), (path, var)
        checked += 1
        if not var["variablesReference"]:
            assert ui["children_total"] == 0
            return
        assert var.get("indexedVariables", var.get("namedVariables")) == ui["children_total"]
        kids = _ask(s, "variables", variablesReference=var["variablesReference"])["variables"]
        assert [k["name"].strip("[]<>") for k in kids] == [c["key"].strip("[]<>") for c in ui["children"]]
        if depth > 0:
            for k, c in zip(kids, ui["children"]):
                same(k, tl, v, c["path"], depth - 1)

    for t in s.threads.values():
        for idx in range(t.entries):
            t.idx = idx
            s.last_thread = t
            s.reset_handles()
            frame = _ask(s, "stackTrace", threadId=t.dap_id)["stackFrames"][0]
            scopes = _ask(s, "scopes", frameId=frame["id"])["scopes"]
            refs = dict(frame_local_refs(s, s.frames[frame["id"]]))
            (scope,) = [x for x in scopes if x["name"] == "Locals"]
            for var in _ask(s, "variables", variablesReference=scope["variablesReference"])["variables"]:
                ref = refs[var["name"]]
                if ref is None or ref & (1 << 32):
                    continue  # no value, or a write's target: the UI opens values by their entry ref
                same(var, ref >> 33, ref & 0xFFFF_FFFF, [], 2)
    assert checked > 50


def test_an_earlier_state_says_which_entry_it_is_as_of(tmp_path):
    """A field shown as an earlier state (``reference_programs/deep.py``: ``root.child``) ends
    with the entry that state is as of, the one ``values.Earlier.idx`` names."""
    program = HERE.parent / "reference_programs" / "deep.py"
    out = tmp_path / "deep.sqrec"
    subprocess.run([sys.executable, "-m", "squall", "run", "-q", "-o", str(out), str(program)], timeout=120)
    rec = squall.load(out)
    s = _session(rec)
    (t,) = s.threads.values()
    call = rec.find_fn_call_entry(t.flow_id, t.thread_id, fn_name="show")
    want = rec.deref_val_id(call["fn_args_ref"])[0].child.idx
    assert want is not None
    node = {v["name"]: v for v in _locals_at(s, "show", "idx")}["node"]
    child = {c["name"]: c for c in node["children"]}["child"]
    assert child["value"].startswith("(earlier) Node#") and child["value"].endswith(f"  [as of entry {want}]"), child
    assert "[as of" not in node["value"]
