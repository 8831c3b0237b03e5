"""`squall mcp` answers every message: malformed JSON-RPC lines get the JSON-RPC error (-32700
parse error, -32600 invalid request) instead of silence, a lone surrogate is answered, and tool
arguments out of their range (negative limit/offset, `idx: true`, empty search text) are refused
with a reason. Driven over stdio: raw lines for the malformed messages, the official SDK client for
the tool calls."""

import json
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SQUALL = str(Path(sys.executable).parent / "squall")
PROGRAM = ROOT / "tests" / "agent_programs" / "invoices_serial.py"
NO_MCP = "the MCP SDK is not installed (the mcp extra needs Python 3.10+)"

pytest.importorskip("mcp", reason=NO_MCP)


@pytest.fixture(scope="module")
def rec_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcp") / "invoices.sqrec"
    r = subprocess.run(
        [SQUALL, "run", "-q", "-o", str(path), str(PROGRAM)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return path


class Raw:
    """`squall mcp` as a subprocess, spoken to in raw lines."""

    def __init__(self, rec_path):
        self.p = subprocess.Popen(
            [SQUALL, "mcp", str(rec_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.buf = b""

    def send(self, line: bytes) -> None:
        self.p.stdin.write(line + b"\n")
        self.p.stdin.flush()

    def recv(self, timeout: float = 10.0):
        """The next line the server writes, parsed, or None if none comes within `timeout`."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                return None
            chunk = self.p.stdout.read1(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def initialize(self) -> None:
        self.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"},
                    },
                }
            ).encode()
        )
        assert self.recv()["id"] == 0
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def close(self) -> None:
        self.p.stdin.close()
        try:
            self.p.wait(10)
        finally:
            if self.p.poll() is None:
                self.p.kill()
            self.p.stdout.close()
            self.p.stderr.close()


@pytest.fixture
def raw(rec_path):
    r = Raw(rec_path)
    r.initialize()
    yield r
    r.close()


# (line sent, the JSON-RPC error code expected, the id expected in the answer)
MALFORMED = [
    (b"not json", -32700, None),
    (b"{", -32700, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700, None),
    (b"\xff\xfe{}", -32700, None),
    (b"[]", -32600, None),
    (b'[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]', -32600, None),
    (b"1", -32600, None),
    (b'"ping"', -32600, None),
    (b"null", -32600, None),
    (b"true", -32600, None),
    (b"{}", -32600, None),
    (b'{"id": 3, "method": "ping"}', -32600, 3),
    (b'{"jsonrpc": "1.0", "id": 4, "method": "ping"}', -32600, 4),
    (b'{"jsonrpc": 2.0, "id": 5, "method": "ping"}', -32600, 5),
    (b'{"jsonrpc": "2.0", "id": 6}', -32600, 6),
    (b'{"jsonrpc": "2.0", "id": 7, "method": 5}', -32600, 7),
    (b'{"jsonrpc": "2.0", "id": 8, "method": null}', -32600, 8),
    (b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": 5}', -32600, 9),
    (b'{"jsonrpc": "2.0", "id": 10, "result": {}, "error": {"code": 1, "message": "x"}}', -32600, 10),
    (b'{"jsonrpc": "2.0", "method": 7}', -32600, None),
]


def test_every_malformed_message_is_answered_with_the_json_rpc_error(raw):
    for line, code, msg_id in MALFORMED:
        raw.send(line)
        got = raw.recv()
        assert got is not None, f"no answer to {line!r}"
        assert got["jsonrpc"] == "2.0" and got["id"] == msg_id, (line, got)
        assert got["error"]["code"] == code, (line, got)
        assert got["error"]["message"], line
    # and the server still answers well-formed requests
    raw.send(b'{"jsonrpc": "2.0", "id": 99, "method": "ping"}')
    assert raw.recv() == {"jsonrpc": "2.0", "id": 99, "result": {}}


def test_a_lone_surrogate_is_answered(raw):
    raw.send(
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
        b'"params": {"name": "search", "arguments": {"text": "\\ud800"}}}'
    )
    got = raw.recv()
    assert got is not None, "a request with a lone surrogate got no answer"
    assert got["id"] == 1 and got["error"]["code"] == -32600
    assert "surrogate" in got["error"]["message"]
    raw.send(
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", '
        b'"params": {"name": "search", "arguments": {"text": "\\ud83d\\ude00"}}}'
    )  # a valid pair
    got = raw.recv()
    assert got["id"] == 2 and "result" in got


def call_tools(rec_path, calls):
    """[(is_error, text)] of each (tool, arguments) through the official client."""
    import anyio
    import mcp
    from mcp.client.stdio import stdio_client

    async def run():
        params = mcp.StdioServerParameters(command=SQUALL, args=["mcp", str(rec_path)])
        out = []
        async with stdio_client(params) as streams:
            async with mcp.ClientSession(streams[0], streams[1]) as s:
                await s.initialize()
                for name, args in calls:
                    r = await s.call_tool(name, args)
                    err = r.isError if hasattr(r, "isError") else r.is_error
                    out.append((err, r.content[0].text))
        return out

    return anyio.run(run)


def test_tool_arguments_out_of_range_are_refused(rec_path):
    bad = [
        ("calls", {"fn": "process_invoice", "limit": -1}, "limit"),
        ("calls", {"fn": "process_invoice", "offset": -2}, "offset"),
        ("exceptions", {"limit": -1}, "limit"),
        ("frequencies", {"limit": -3}, "limit"),
        ("window", {"idx": 5, "before": -1}, "before"),
        ("call", {"idx": True}, "idx"),
        ("source", {"idx": True}, "idx"),
        ("stack", {"idx": -1}, "idx"),
        ("search", {"text": ""}, "text"),
        ("calls", {"fn": "process_invoice", "flow": True}, "flow"),
        ("stack", {"idx": 1, "thread": True}, "thread"),
    ]
    answers = call_tools(rec_path, [(n, a) for n, a, _ in bad])
    for (name, args, field), (err, text) in zip(bad, answers):
        assert err, f"{name}({args}) answered: {text[:200]}"
        assert field in text, (name, text)


def test_paging_in_range_still_works(rec_path):
    ((err, text),) = call_tools(rec_path, [("calls", {"fn": "process_invoice", "limit": 2, "offset": 4})])
    assert not err, text
    d = json.loads(text)
    assert d["total"] == 5 and d["offset"] == 4 and d["shown"] == 1


def test_the_agent_checks_counts_too():
    """`squall query` and the Python API go through the same checks as MCP."""
    from squall import agent

    with pytest.raises(agent.AgentError, match="limit must be a whole number >= 0, not -1"):
        agent._count("limit", -1)
    with pytest.raises(agent.AgentError, match="not True"):
        agent._count("idx", True)


def test_a_recorded_lone_surrogate_does_not_stop_the_answer(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text('def echo(s):\n    return s\n\necho("ab\\ud800cd")\n')
    rec = tmp_path / "p.sqrec"
    r = subprocess.run([SQUALL, "run", "-q", "-o", str(rec), str(prog)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    raw = Raw(rec)
    try:
        raw.initialize()
        raw.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "calls", "arguments": {"fn": "echo"}},
                }
            ).encode()
        )
        got = raw.recv()
        assert got is not None and got["id"] == 1, got
        text = got["result"]["content"][0]["text"]
        assert "ab\ufffdcd" in text, text  # recorded strings are UTF-8: the surrogate was replaced
    finally:
        raw.close()
