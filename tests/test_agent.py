"""`squall query` and `squall mcp`: the agent-facing answers over a recording of the bundled
example, as JSON snapshots (tests/snapshots/, `SQUALL_UPDATE_SNAPSHOTS=1 pytest tests/test_agent.py`
rewrites them), as text, and through a real MCP client (the official `mcp` SDK)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import squall
from squall import agent

ROOT = Path(__file__).resolve().parent.parent
SQUALL = str(Path(sys.executable).parent / "squall")
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
PROGRAM = ROOT / "tests" / "agent_programs" / "invoices_serial.py"
UPDATE = os.environ.get("SQUALL_UPDATE_SNAPSHOTS") == "1"

NO_MCP = "the MCP SDK is not installed (the mcp extra needs Python 3.10+)"


@pytest.fixture(scope="module")
def rec_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("agent") / "invoices.sqrec"
    r = subprocess.run(
        [SQUALL, "run", "-q", "-o", str(path), str(PROGRAM)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return path


@pytest.fixture(scope="module")
def rec(rec_path):
    return squall.load(rec_path)


def query(rec_path, *args, json_out=True):
    cmd = [SQUALL, "query", str(rec_path), *map(str, args)] + (["--json"] if json_out else [])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def normalise(text: str, rec_path, rec) -> str:
    """Stable across machines and runs: thread ids by name, paths, addresses."""
    for info in rec.flow_threads_info(0):
        text = re.sub(rf"\b{info['thread_id']}\b", f'"<tid:{info["thread_name"]}>"', text)
    text = text.replace(str(rec_path), "<REC>").replace(str(ROOT), "<ROOT>")
    return renumber_ids(re.sub(r"0x[0-9a-f]{6,}", "0x?", text))


def renumber_ids(text: str) -> str:
    """Recorded identities (`Item#12`) numbered by first appearance: which number an object gets
    depends on what the Python version allocates and records before it, not on the program."""
    seen: dict = {}
    return re.sub(r"(?<=[A-Za-z_>])#(\d+)", lambda m: "#" + str(seen.setdefault(m.group(1), len(seen) + 1)), text)


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.json"
    if UPDATE or not path.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"new snapshot {path.name} written: check it and commit it")
        return
    assert text == path.read_text(), (
        f"the answer differs from {path.name}; if the change is right, rerun with SQUALL_UPDATE_SNAPSHOTS=1"
    )


CASES = {
    "summary": ["summary"],
    "calls": ["calls", "process_invoice", "--limit", "3"],
    "calls_method": ["calls", "Invoice.add", "--limit", "2", "--offset", "1"],
    "call": ["call", 430],
    "exceptions": ["exceptions"],
    "frequencies": ["frequencies", "--limit", "5"],
    "stack": ["stack", 558],
    "window": ["window", 558, "--before", "6", "--after", "3"],
    "bindings": ["bindings", 558],
    "source": ["source", 558],
    "search": ["search", "JP", "--limit", "4"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_query_json_snapshots(name, rec_path, rec):
    r = query(rec_path, *CASES[name])
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    json.loads(r.stdout)  # stdout is data only
    check_snapshot("query_" + name, normalise(r.stdout, rec_path, rec))


@pytest.mark.parametrize("name", sorted(CASES))
def test_query_text(name, rec_path):
    r = query(rec_path, *CASES[name], json_out=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() and r.stderr == ""


def test_query_answers_tell_the_story(rec):
    exc = agent.exceptions(rec)
    assert exc["total"] == 2
    key_error = exc["exceptions"][0]
    assert key_error["exception"] == "KeyError: 'no tax rate for JP'"
    assert key_error["fn"] == "billing.pricing.tax_for" and key_error["line"] == 53
    assert key_error["caught_in"] == "billing.processing.process_invoice"
    stack = agent.stack(rec, key_error["idx"])
    assert [f["fn"] for f in stack["frames"]][:3] == [
        "billing.pricing.tax_for",
        "billing.pricing.rounded.<locals>.wrapper",
        "billing.processing.process_invoice",
    ]
    assert stack["frames"][0]["args"] == {"amount": "2175.49", "country": "'JP'"}
    call = agent.call(rec, stack["frames"][2]["idx"])
    assert call["returned"] == "{'number': 'INV-004', 'net': 2175.49, 'tax': 0.0, 'total': 2175.49}"
    assert any(c.get("raised", "").startswith("KeyError") for c in call["children"])
    assert agent.bindings(rec, key_error["idx"])["bindings"][-1] == {
        "symbol": "rate",
        "value": "None",
        "line": 51,
        "since_idx": key_error["idx"] - 4,
    }
    src = agent.source(rec, key_error["idx"])
    assert any(line.startswith("> 53 |") and "raise KeyError" in line for line in src["lines"])


def test_previews_are_bounded(rec):
    long = agent.preview(list(range(10_000)))
    assert len(long) < 100 and long.endswith("...]")
    text = agent.preview("x" * 5000)
    assert len(text) < agent.MAX_CHARS + 40 and "more chars" in text
    nested = agent.preview({"a": {"b": {"c": {"d": 1}}}}, print_level=2)
    assert nested == "{'a': {'b': {...}}}"


def test_query_errors_go_to_stderr(rec_path, tmp_path):
    for args, needle in [
        (["call", 99999], "out of range"),
        (["calls", "no_such_fn"], "no recorded function matches"),
        (["calls", "proces_invoice"], "did you mean"),
        (["stack", 3, "--thread", "nope"], "no thread 'nope'"),
        (["stack", 3, "--flow", 7], "no flow 7"),
    ]:
        r = query(rec_path, *args)
        assert r.returncode == 1 and r.stdout == "" and needle in r.stderr, (args, r.stderr)
    r = query(tmp_path / "missing.sqrec", "summary")
    assert r.returncode == 1 and r.stdout == "" and "no recording" in r.stderr


def test_search_is_bounded_and_reports_completeness(rec):
    some = agent.search(rec, "INV-00", limit=3)
    assert some["shown"] == 3 and not some["complete"]
    none = agent.search(rec, "definitely not recorded")
    assert none["hits"] == [] and none["complete"]
    timed = agent.search(rec, "definitely not recorded", max_seconds=0)
    assert not timed["complete"]


def test_threads_by_name_or_id(rec_path):
    live = squall.load(rec_path)
    tid = live.all_flows()[0][0]
    by_id = agent.window(live, 5, thread=tid, before=0, after=0)
    by_name = agent.window(live, 5, thread="MainThread", before=0, after=0)
    assert by_id == by_name and by_id["thread_name"] == "MainThread"


# --- MCP ------------------------------------------------------------------------------------------

TOOLS = {
    "summary",
    "calls",
    "call",
    "exceptions",
    "stack",
    "frequencies",
    "search",
    "window",
    "source",
    "bindings",
    "history",
    "writes",
    "origin",
    "diff",
    "frames",
}


def test_mcp_server_with_the_official_client(rec_path):
    mcp = pytest.importorskip("mcp", reason=NO_MCP)
    import anyio
    from mcp.client.stdio import stdio_client

    async def session_run():
        params = mcp.StdioServerParameters(command=SQUALL, args=["mcp", str(rec_path)])
        async with stdio_client(params) as streams:
            read, write = streams[0], streams[1]
            async with mcp.ClientSession(read, write) as s:
                await s.initialize()
                tools = (await s.list_tools()).tools
                assert {t.name for t in tools} == TOOLS
                for t in tools:
                    assert len(t.description) > 60, t.name
                schema = {t.name: t.inputSchema if hasattr(t, "inputSchema") else t.input_schema for t in tools}
                assert schema["calls"]["required"] == ["fn"]
                assert schema["call"]["properties"]["idx"]["type"] == "integer"

                async def ask(name, **args):
                    r = await s.call_tool(name, args)
                    err = r.isError if hasattr(r, "isError") else r.is_error
                    return err, r.content[0].text

                answers = {}
                for name, args in [
                    ("summary", {}),
                    ("calls", {"fn": "process_invoice", "limit": 2}),
                    ("call", {"idx": 430}),
                    ("exceptions", {}),
                    ("stack", {"idx": 558}),
                    ("frequencies", {"limit": 3}),
                    ("search", {"text": "JP", "limit": 2}),
                    ("window", {"idx": 558, "before": 2, "after": 2}),
                    ("source", {"idx": 558}),
                    ("bindings", {"idx": 558, "thread": "MainThread"}),
                    ("history", {"obj_id": 1, "limit": 2}),
                ]:
                    err, text = await ask(name, **args)
                    assert not err, (name, text)
                    assert len(text) < 20_000, name
                    answers[name] = json.loads(text)
                w = await s.call_tool("writes", {"name": "total", "limit": 1})  # `name` is ask()'s own
                assert not (w.isError if hasattr(w, "isError") else w.is_error), w.content[0].text
                answers["writes"] = json.loads(w.content[0].text)
                err, text = await ask("call", idx=99999)
                assert err and "out of range" in text
                return answers

    a = anyio.run(session_run)
    assert a["summary"]["exception_count"] == 2
    assert a["calls"]["total"] == 5 and a["calls"]["shown"] == 2
    assert a["call"]["fn"] == "billing.processing.process_invoice"
    assert a["writes"]["shown"] == 1 and a["writes"]["left_out"] == a["writes"]["total"] - 1 > 0
    assert a["exceptions"]["exceptions"][0]["exception"] == "KeyError: 'no tax rate for JP'"
    assert a["stack"]["frames"][0]["fn"] == "billing.pricing.tax_for"
    assert a["frequencies"]["frequencies"][0]["fn"] == "billing.pricing.tier_discount"
    assert a["search"]["shown"] == 2
    assert [e["idx"] for e in a["window"]["entries"]] == [556, 557, 558, 559, 560]
    assert any(line.startswith("> 53 |") for line in a["source"]["lines"])
    assert [b["symbol"] for b in a["bindings"]["bindings"]] == ["amount", "country", "rate"]


def test_mcp_stdout_is_protocol_only(rec_path):
    pytest.importorskip("mcp", reason=NO_MCP)
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    p = subprocess.run(
        [SQUALL, "mcp", str(rec_path)], input=json.dumps(init) + "\n", capture_output=True, text=True, timeout=60
    )
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    assert lines, p.stderr
    for ln in lines:
        assert json.loads(ln)["jsonrpc"] == "2.0"


def test_mcp_bad_recording(tmp_path):
    p = subprocess.run([SQUALL, "mcp", str(tmp_path / "nope.sqrec")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stdout == "" and "no recording" in p.stderr


def test_mcp_without_the_sdk_says_how_to_install_it(rec_path):
    # the `mcp` extra needs Python 3.10+; without it, a loadable recording gets the install hint
    code = (
        "import sys; sys.modules['mcp'] = None; from squall import mcp_server; sys.exit(mcp_server.main(sys.argv[1]))"
    )
    p = subprocess.run([sys.executable, "-c", code, str(rec_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stdout == "" and "pip install 'squall[mcp]'" in p.stderr
