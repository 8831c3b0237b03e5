"""`squall dap`'s framing (Content-Length + JSON) and what it does with bad input: it says what
is wrong on stderr and exits instead of hanging the editor."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from squall.dap.protocol import Channel


def _frame(msg: dict) -> bytes:
    data = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def test_channel_reads_frames_and_numbers_what_it_sends():
    inp = io.BytesIO(_frame({"seq": 1, "type": "request", "command": "threads"}) + _frame({"seq": 2, "x": "é"}))
    out = io.BytesIO()
    ch = Channel(inp, out)
    assert ch.read()["command"] == "threads"
    assert ch.read()["x"] == "é"
    assert ch.read() is None
    ch.respond({"seq": 1, "command": "threads"}, {"threads": []})
    ch.fail({"seq": 2, "command": "attach"}, "no recording at `x`")
    raw = out.getvalue()
    first, rest = raw.split(b"\r\n\r\n", 1)
    n = int(first.split(b":")[1])
    msg = json.loads(rest[:n])
    assert msg == {
        "type": "response",
        "request_seq": 1,
        "command": "threads",
        "success": True,
        "body": {"threads": []},
        "seq": 1,
    }
    second = json.loads(rest[n:].split(b"\r\n\r\n", 1)[1])
    assert second["success"] is False and second["message"] == "no recording at `x`" and second["seq"] == 2


def _run_adapter(stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "squall", "dap"], input=stdin, capture_output=True, timeout=60)


def test_bad_header_is_reported_and_the_adapter_exits():
    r = _run_adapter(b"Content-Length: lots\r\n\r\n{}")
    assert r.returncode == 1
    assert b"bad Content-Length header" in r.stderr


def test_body_that_is_not_json_is_reported():
    r = _run_adapter(b"Content-Length: 5\r\n\r\nhello")
    assert r.returncode == 1
    assert b"not UTF-8 JSON" in r.stderr and b"hello" in r.stderr


def test_end_of_input_ends_the_session_cleanly():
    r = _run_adapter(_frame({"seq": 1, "type": "request", "command": "initialize", "arguments": {}}))
    assert r.returncode == 0
    assert b'"supportsStepBack": true' in r.stdout
