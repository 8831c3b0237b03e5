"""Every corpus program (tests/programs) through `squall dap`'s requests, in process: stepping
in to the end and back to the start (and next / stepOut / their backward forms at each stop),
each stop's stack, scopes, variables (one level expanded) and an evaluate of each local. Every
request is answered successfully; forward steps only move forward and backward steps only back.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import squall
from squall.dap import lifecycle  # noqa: F401 - registers the handlers
from squall.dap.session import Session

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "tests" / "programs").glob("*.py"))
MAX_STEPS = 400


class _Recorder:
    """Stands for the channel: keeps what the session sends."""

    def __init__(self) -> None:
        self.sent: List[Dict[str, Any]] = []

    def respond(self, req: Dict[str, Any], body: Any = None) -> None:
        self.sent.append({"type": "response", "command": req.get("command"), "success": True, "body": body})

    def fail(self, req: Dict[str, Any], message: str, error_id: int = 1) -> None:
        self.sent.append({"type": "response", "command": req.get("command"), "success": False, "message": message})

    def event(self, event: str, body: Any = None) -> None:
        self.sent.append({"type": "event", "event": event, "body": body})


def _ask(s: Session, command: str, **args: Any) -> Any:
    ch: _Recorder = s.ch  # type: ignore[assignment]
    before = len(ch.sent)
    s.dispatch({"seq": 1, "type": "request", "command": command, "arguments": args})
    (response,) = [m for m in ch.sent[before:] if m["type"] == "response"]
    assert response["success"], f"{command} {args}: {response.get('message')}"
    return response["body"]


def _inspect(s: Session, tid: int) -> None:
    stack = _ask(s, "stackTrace", threadId=tid)
    assert stack["stackFrames"] and stack["totalFrames"] >= len(stack["stackFrames"])
    for frame in stack["stackFrames"][:3]:
        assert frame["line"] >= 1
        for scope in _ask(s, "scopes", frameId=frame["id"])["scopes"]:
            for v in _ask(s, "variables", variablesReference=scope["variablesReference"])["variables"]:
                if v["variablesReference"]:
                    _ask(s, "variables", variablesReference=v["variablesReference"], start=0, count=5)
                if scope["name"] == "Locals" and v["name"].isidentifier():
                    _ask(s, "evaluate", expression=v["name"], frameId=frame["id"], context="hover")


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_every_request_answers_over_the_corpus(program, tmp_path):
    out = tmp_path / "run.sqrec"
    subprocess.run(
        [sys.executable, "-m", "squall", "run", "-q", "-o", str(out), str(program)],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert out.exists()
    rec = squall.load(str(out))
    if not rec.all_flows():
        pytest.skip(f"{program.name} records nothing")  # module-level code only
    s = Session(_Recorder())  # type: ignore[arg-type]
    s.open(rec)
    _ask(s, "setExceptionBreakpoints", filters=["raised"])
    for t in s.threads.values():
        t.idx = 0
        s.last_thread = t
        _inspect(s, t.dap_id)
        for _ in range(MAX_STEPS):
            before = t.idx
            _ask(s, "stepIn", threadId=t.dap_id)
            if t.idx == before:
                break
            assert t.idx > before
            _inspect(s, t.dap_id)
            at = t.idx
            for forward, back in (("next", "stepBack"), ("stepOut", "squall/stepOutBack")):
                _ask(s, forward, threadId=t.dap_id)
                there = t.idx
                assert there >= at
                _ask(s, back, threadId=t.dap_id)
                assert t.idx < there or there == 0
                _ask(s, "squall/gotoEntry", threadId=t.dap_id, idx=at)
            if s.breakpoints.exception_at(t, t.idx) is not None:
                _ask(s, "exceptionInfo", threadId=t.dap_id)
        for _ in range(MAX_STEPS):
            before = t.idx
            _ask(s, "squall/stepInBack", threadId=t.dap_id)
            if t.idx == before:
                break
            assert t.idx < before
        _ask(s, "continue", threadId=t.dap_id)
        _ask(s, "reverseContinue", threadId=t.dap_id)
