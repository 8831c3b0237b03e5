"""The planted-bug corpus (tests/agent_programs/: mutation.py, wrong_branch.py, upstream.py,
race.py), each recorded and debugged through `squall mcp` with the official MCP SDK client along
the shortest path an agent would take: the root cause is reached in at most 5 tool calls, and
every answer is under 8 KB. Also: every tool publishes an output schema and answers structured
content that fits it, the server names itself and its version, and bad arguments get errors
that say what was wrong and what to send."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import squall

pytest.importorskip("mcp", reason="the MCP SDK is not installed (the mcp extra needs Python 3.10+)")

ROOT = Path(__file__).resolve().parent.parent
SQUALL = str(Path(sys.executable).parent / "squall")
PROGRAMS = ROOT / "tests" / "agent_programs"
MAX_ANSWER = 8 * 1024
MAX_CALLS = 5


def record(name: str, tmp: Path) -> Path:
    path = tmp / f"{name}.sqrec"
    r = subprocess.run(
        [SQUALL, "run", "-q", "-o", str(path), str(PROGRAMS / f"{name}.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return path


def field(obj, snake: str, camel: str):
    """A field of an SDK object: snake_case in mcp >= 2, camelCase in 1.x."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


class Agent:
    """An MCP client session over `squall mcp REC` that counts tool calls and measures answers."""

    def __init__(self, session):
        self.s = session
        self.calls = 0
        self.sizes = []

    async def ask(self, tool: str, **args):
        self.calls += 1
        r = await self.s.call_tool(tool, args)
        text = r.content[0].text
        assert not field(r, "is_error", "isError"), f"{tool}({args}): {text}"
        data = field(r, "structured_content", "structuredContent")
        assert data is not None, f"{tool} answered no structured content"
        assert json.loads(text) == data, "the text content is the structured content as JSON"
        size = len(json.dumps(data, ensure_ascii=False).encode())
        self.sizes.append((tool, size))
        assert size < MAX_ANSWER, f"{tool}({args}) answered {size} bytes"
        return data

    async def fail(self, tool: str, **args) -> str:
        r = await self.s.call_tool(tool, args)
        assert field(r, "is_error", "isError"), f"{tool}({args}) should fail: {r.content[0].text[:200]}"
        return r.content[0].text


def drive(rec_path: Path, scenario):
    """Runs ``scenario(agent)`` against a `squall mcp` server of ``rec_path``; returns its result
    and the agent (calls made, answer sizes)."""
    import anyio
    import mcp
    from mcp.client.stdio import stdio_client

    async def run():
        params = mcp.StdioServerParameters(command=SQUALL, args=["mcp", str(rec_path)])
        async with stdio_client(params) as streams:
            async with mcp.ClientSession(streams[0], streams[1]) as s:
                init = await s.initialize()
                agent = Agent(s)
                agent.init = init
                agent.tools = (await s.list_tools()).tools
                return await scenario(agent), agent

    return anyio.run(run)


def test_mutation_in_place_is_traced_to_the_write(tmp_path):
    """order_total's second answer is 18.0 (20.0 is right): its origin leads through the total's
    binding to `item.price`, whose value the write in `discounted` put there."""

    async def scenario(a):
        found = await a.ask("calls", fn="order_total")
        wrong = next(c for c in found["calls"] if c["returned"] == "18.0")
        steps = (await a.ask("origin", idx=wrong["ret_idx"], thread=wrong["thread_id"]))["steps"]
        return steps

    steps, agent = drive(record("mutation", tmp_path), scenario)
    writes = [s for s in steps if s["via"].startswith("write")]
    # The pad's price was set when it was made; the pen's, read as 1.0, by `discounted`.
    assert {(s["fn"], s["line"]) for s in writes} == {("__main__.Item.__init__", 9), ("__main__.discounted", 18)}
    write = next(s for s in writes if s["fn"] == "__main__.discounted")
    assert (write["kind"], write["value"]) == ("write", "1.0"), write
    assert write["code"].startswith("item.price"), write
    read = steps[write["from_step"]]
    assert (read["code"], read["fn"], read["value"]) == ("item.price", "__main__.order_total", "1.0"), read
    assert agent.calls <= MAX_CALLS


def test_a_wrong_branch_is_found_by_diffing_a_good_and_the_bad_call(tmp_path):
    """shipping_cost(10) takes the parcel branch, shipping_cost(12) the freight one: their diff's
    first divergence is the `if` test (line 9, the bug), then the branch taken (lines 10 / 12)."""

    async def scenario(a):
        bad = (await a.ask("calls", fn="shipping_cost", where="weight == 10"))["calls"][0]
        good = (await a.ask("calls", fn="shipping_cost", where="weight > 10", limit=1))["calls"][0]
        return await a.ask("diff", a_idx=good["idx"], b_idx=bad["idx"])

    d, agent = drive(record("wrong_branch", tmp_path), scenario)
    assert d["args_equal"] == {"weight": False} and not d["outcome_equal"]
    first = d["first"]
    assert first["kind"] == "value" and first["a"]["line"] == 9 and first["b"]["line"] == 9, first
    assert "weight > FREIGHT_FROM_KG" in first["a"]["text"]
    assert first["a"]["text"].endswith("True") and first["b"]["text"].endswith("False")
    assert (d["first_path"]["a"]["line"], d["first_path"]["b"]["line"]) == (10, 12)
    assert "line 9" in d["verdict"]
    assert agent.calls <= MAX_CALLS


def test_a_value_that_went_bad_three_calls_upstream_is_followed_to_its_source(tmp_path):
    """balance_after returns 80000.0: its origin goes back through interest, yearly_rate and
    parse_rate to `number = float(...)` returned as the rate (7.0, not 0.07)."""

    async def scenario(a):
        call = (await a.ask("calls", fn="balance_after"))["calls"][0]
        assert call["returned"] == "80000.0"
        return (await a.ask("origin", idx=call["ret_idx"]))["steps"]

    steps, agent = drive(record("upstream", tmp_path), scenario)
    fns = {s["fn"] for s in steps}
    assert {"__main__.interest", "__main__.yearly_rate", "__main__.parse_rate"} <= fns, fns
    number = next(s for s in steps if s["fn"] == "__main__.parse_rate" and s["kind"] == "bind")
    assert number["line"] == 7 and number["value"] == "7.0", number
    # The chain from the start to it: each step feeds the one before.
    chain = [number]
    while chain[-1]["from_step"] is not None:
        chain.append(steps[chain[-1]["from_step"]])
    assert [s["fn"] for s in chain][-1] == "__main__.balance_after"
    assert "call result" in [s["via"] for s in chain]
    assert agent.calls <= MAX_CALLS


def test_a_lost_update_in_a_thread_race_shows_in_the_writes(tmp_path):
    """Both workers write hits['home'] = 1: the writes come in the order they happened across
    threads, worker-a's replacing the 1 worker-b wrote (its old value is that write, in
    worker-b) with 1 (the lost update), and its origin is `seen`, which worker-a read as 0
    before that."""

    async def scenario(a):
        summary = await a.ask("summary")
        names = {t["thread_name"] for f in summary["flows"] for t in f["threads"]}
        assert {"worker-a", "worker-b"} <= names
        ws = (await a.ask("writes", name="home"))["writes"]
        lost = next(w for w in ws if w["old"] == w["new"])
        steps = (await a.ask("origin", idx=lost["idx"], thread=lost["thread_id"]))["steps"]
        return ws, lost, steps

    (ws, lost, steps), agent = drive(record("race", tmp_path), scenario)
    assert [(w["thread_name"], w["old"], w["new"]) for w in ws] == [("worker-b", "0", "1"), ("worker-a", "1", "1")]
    assert (lost["thread_name"], lost["line"], lost["old_from"]) == ("worker-a", 19, "previous write")
    first = ws[0]
    assert (lost["old_thread_name"], lost["old_thread_id"], lost["old_idx"]) == (
        "worker-b",
        first["thread_id"],
        first["idx"],
    )
    seen = next(s for s in steps if s["via"] == "name seen")
    assert (seen["kind"], seen["line"], seen["value"], seen["code"]) == ("bind", 13, "0", "seen = hits[page]")
    read = next(s for s in steps if s["from_step"] == seen["step"] and s["via"] == "sub-expression")
    assert (read["code"], read["value"]) == ("hits", "{'home': 0}")
    assert agent.calls <= MAX_CALLS


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return record("upstream", tmp_path_factory.mktemp("mcp"))


def test_every_tool_has_an_output_schema_and_says_what_it_returns(upstream):
    async def scenario(a):
        return a

    a, _ = drive(upstream, scenario)
    info = field(a.init, "server_info", "serverInfo")
    assert (info.name, info.version) == ("squall", squall.__version__)
    names = {t.name for t in a.tools}
    assert {
        "summary",
        "calls",
        "call",
        "frames",
        "origin",
        "diff",
        "exceptions",
        "writes",
        "history",
        "stack",
        "bindings",
        "window",
        "source",
        "search",
        "frequencies",
    } <= names
    for t in a.tools:
        schema = field(t, "output_schema", "outputSchema")
        assert schema and schema.get("type") == "object", t.name
        assert schema.get("properties"), t.name
        assert t.description.startswith("Returns "), (t.name, t.description[:60])


def test_every_tool_answers_structured_content_that_fits_its_schema(upstream):
    """One call of each tool: the server checks the answer against the tool's output schema (a
    mismatch would be an error), the client gets the same JSON as text."""

    async def scenario(a):
        call = (await a.ask("calls", fn="interest"))["calls"][0]
        idx, ret = call["idx"], call["ret_idx"]
        await a.ask("summary")
        await a.ask("call", idx=idx)
        await a.ask("frames", fn="interest")
        await a.ask("origin", idx=ret)
        await a.ask("diff", a_idx=idx, b_idx=idx)
        await a.ask("diff")
        await a.ask("exceptions")
        await a.ask("writes", name="rate")
        await a.ask("history", obj_id=1)
        await a.ask("stack", idx=ret)
        await a.ask("bindings", idx=ret)
        await a.ask("window", idx=ret)
        await a.ask("source", idx=ret)
        await a.ask("search", text="7%")
        await a.ask("frequencies")
        return a

    a, _ = drive(upstream, scenario)
    assert {t for t, _ in a.sizes} >= {t.name for t in a.tools}


def test_errors_say_what_was_wrong_and_what_to_send(upstream):
    async def scenario(a):
        return [
            await a.fail("origin", idx="twelve"),
            await a.fail("calls"),
            await a.fail("nosuchtool"),
            await a.fail("search", text="   "),
            await a.fail("calls", fn="balance_after", where="import os"),
            await a.fail("diff", a_idx=0),
            await a.fail("origin", idx=10**6),
        ]

    texts, _ = drive(upstream, scenario)
    bad_type, missing, unknown, blank, bad_where, one_idx, out_of_range = texts
    assert '`idx` = "twelve" is not a whole number >= 0' in bad_type, bad_type
    assert "from another answer" in bad_type and "Its parameters are" in bad_type
    assert "`fn` is missing" in missing, missing
    assert "there is no tool 'nosuchtool'" in unknown and "origin" in unknown, unknown
    assert "'   '" in blank and "blank" in blank, blank
    assert "'import os' is not an expression" in bad_where, bad_where
    assert "two call idxs" in one_idx, one_idx
    assert "idx 1000000 is out of range" in out_of_range, out_of_range


def test_a_window_past_its_cap_says_so_and_where_to_go_on(upstream):
    async def scenario(a):
        call = (await a.ask("calls", fn="interest"))["calls"][0]
        return await a.ask("window", idx=call["idx"], before=500, after=500)

    w, _ = drive(upstream, scenario)
    assert "at most 200 entries either side: asked 500 before and 500 after" in w["capped"], w["capped"]


SHIP = """
import sys

def cost(w):
    if w > 10:
        return 50 + w
    return 5 + w

def main(ws):
    return [cost(w) for w in ws]

print(main([int(a) for a in sys.argv[1:]]))
"""


def test_diff_compares_with_another_recording_named_by_path(tmp_path):
    """Two runs of one program (weights 3, 12 and 3, 9): the agent serves the first and names the
    second by path; a path that is missing or not a recording gets an error quoting it."""
    prog = tmp_path / "ship.py"
    prog.write_text(SHIP)
    recs = []
    for name, args in (("a", ["3", "12"]), ("b", ["3", "9"])):
        out = tmp_path / f"{name}.sqrec"
        r = subprocess.run(
            [SQUALL, "run", "-q", "-o", str(out), str(prog), *args], capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 0, r.stderr
        recs.append(out)
    not_rec = tmp_path / "notes.txt"
    not_rec.write_text("not a recording\n")

    async def scenario(a):
        d = await a.ask("diff", other=str(recs[1]))
        same = await a.ask("diff", other=str(recs[0]))
        missing = await a.fail("diff", other=str(tmp_path / "nope.sqrec"))
        wrong = await a.fail("diff", other=str(not_rec))
        return d, same, missing, wrong

    (d, same, missing, wrong), _ = drive(recs[0], scenario)
    assert same["same"] is True
    assert d["same"] is False
    # main differs; inside it, the second cost() call: 12 took the freight branch, 9 did not.
    assert [p["fn"] for p in d["path"]] == ["__main__.main", "__main__.cost"]
    assert (d["first_path"]["a"]["line"], d["first_path"]["b"]["line"]) == (6, 7)
    for err, path in ((missing, "nope.sqrec"), (wrong, "notes.txt")):
        assert path in err and "squall run -o FILE" in err, err
    assert "not a squall recording" in wrong or "magic" in wrong, wrong
