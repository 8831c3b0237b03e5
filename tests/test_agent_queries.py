"""The agent queries beyond MCP: `calls --where` predicates (the core's language,
`crates/squall_trace/src/predicate/`, unit-tested in `crates/squall_trace/tests/predicate.rs`), `frames`,
`origin` over the live recording and over a file made before sites noted what they read, and
`diff` of two recordings of the same program (`squall query F diff --other G`)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import squall
from squall import agent

ROOT = Path(__file__).resolve().parent.parent
SQUALL = str(Path(sys.executable).parent / "squall")
PROGRAMS = ROOT / "tests" / "agent_programs"
V1 = ROOT / "crates" / "squall_store" / "tests" / "fixtures" / "v1_tally.sqrec"


def record(program: Path, out: Path, *args: str) -> Path:
    r = subprocess.run(
        [SQUALL, "run", "-q", "-o", str(out), str(program), *args], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return out


def query(rec: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SQUALL, "query", str(rec), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def branch(tmp_path_factory):
    return squall.load(record(PROGRAMS / "wrong_branch.py", tmp_path_factory.mktemp("q") / "b.sqrec"))


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "the predicate is empty"),
        ("weight ==", "is not an expression"),
        ("__import__('os')", "calls something other than len(x)"),
        ("item.__class__", "names starting with '_' are not allowed"),
        ("[x for x in y]", "uses ListComp"),
        ("d[k] == 1", "an item key must be a constant"),
        ("lambda: 1", "uses Lambda"),
    ],
)
def test_bad_predicates_say_what_is_wrong(branch, text, says):
    with pytest.raises(agent.AgentError) as e:
        agent.calls(branch, "shipping_cost", where=text)
    assert says in str(e.value)
    assert repr(text) in str(e.value) or not text


def test_a_predicate_naming_what_the_call_has_not_lists_its_names(branch):
    with pytest.raises(agent.AgentError) as e:
        agent.calls(branch, "shipping_cost", where="wieght == 10")
    assert "names 'wieght', which this call does not have; its names are raised, ret, weight" in str(e.value)


def test_calls_where_keeps_the_calls_it_holds_for(branch):
    got = agent.calls(branch, "shipping_cost", where="ret < 20")
    assert [c["args"]["weight"] for c in got["calls"]] == ["1", "3", "10"]
    assert got["total"] == 3 and got["where"] == "ret < 20"
    with pytest.raises(agent.AgentError, match="names 'cost'"):
        agent.calls(branch, "shipping_cost", where="cost > 1")


def test_frames_show_each_calls_locals_as_its_frame_ended(branch):
    got = agent.frames(branch, "shipping_cost", where="weight >= 10")
    assert [(f["args"]["weight"], f["locals"]) for f in got["frames"]] == [
        ("12", {"weight": "12", "cost": "74"}),
        ("10", {"weight": "10", "cost": "15"}),
        ("15", {"weight": "15", "cost": "80"}),
    ]
    page = agent.frames(branch, "shipping_cost", limit=2)
    assert page["shown"] == 2 and page["more"] == "3 more frame(s): ask again with offset=2"


def test_origin_over_a_file_without_site_reads_says_so():
    rec = squall.load(V1)
    got = agent.origin(rec, 3)
    assert got["steps"][0]["kind"] == "expr"
    # Its expression's parts are still found by their source range; names are not known.
    leaves = {s["leaf"] for s in got["steps"] if s.get("leaf")}
    assert leaves and all("older squall" in x or "literals" in x for x in leaves), got["steps"]
    bind = agent.origin(rec, 1)  # `counts = {}`: a binding, which says nothing of its value here
    assert bind["steps"][0]["leaf"] == "this recording does not say what this site reads (recorded by an older squall)"


def test_origin_of_a_function_that_ends_without_return_says_its_result_is_none(tmp_path):
    """upstream.py's main() falls off its end: origin of its return said "recorded by an older
    squall" of a recording made by this one."""
    rec = squall.load(record(PROGRAMS / "upstream.py", tmp_path / "u.sqrec"))
    main_ret = agent.calls(rec, "main")["calls"][0]["ret_idx"]
    step = agent.origin(rec, main_ret)["steps"][0]
    assert (step["kind"], step["value"]) == ("fn-return", "None")
    assert step["leaf"] == "the function ended without returning a value: its result is None"


def test_origin_over_the_live_recording(tmp_path):
    """The same query over the recording in this process (the engine's live backend)."""
    code = textwrap.dedent("""
        import json, sys
        import squall.api, squall.indexes as ix
        from squall import agent

        def double(n):
            return n * 2

        def main():
            x = 21
            y = double(x)
            return y

        main()
        steps = agent.origin(ix._live, 5)["steps"]
        print(json.dumps([(s["via"], s["kind"], s["value"]) for s in steps]))
    """)
    prog = tmp_path / "live.py"
    prog.write_text(code)
    r = subprocess.run(
        [SQUALL, "run", "-q", "--no-save", str(prog)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    steps = json.loads(r.stdout.splitlines()[-1])
    assert steps[:3] == [["start", "fn-return", "42"], ["name y", "bind", "42"], ["call result", "fn-return", "42"]]
    assert ["name x", "bind", "21"] in steps


def test_two_recordings_of_one_program_diff_at_their_first_different_call(tmp_path):
    prog = tmp_path / "ship.py"
    prog.write_text(
        textwrap.dedent("""
        import sys

        def cost(w):
            if w > 10:
                return 50 + w
            return 5 + w

        def main(ws):
            return [cost(w) for w in ws]

        print(main([int(a) for a in sys.argv[1:]]))
    """)
    )
    a = record(prog, tmp_path / "a.sqrec", "3", "12")
    b = record(prog, tmp_path / "b.sqrec", "3", "9")
    same = query(a, "diff", "--other", str(a), "--json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["same"] is True
    r = query(a, "diff", "--other", str(b), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["same"] is False
    # main differs; inside it, the second cost() call: 12 took the freight branch, 9 did not.
    assert [p["fn"] for p in d["path"]] == ["__main__.main", "__main__.cost"]
    assert d["first"]["kind"] == "value" and "w > 10" in d["first"]["a"]["text"]
    assert (d["first_path"]["a"]["line"], d["first_path"]["b"]["line"]) == (6, 7)
    text = query(a, "diff", "--other", str(b))
    assert "path: __main__.main" in text.stdout and "first (value):" in text.stdout
    bad = query(a, "diff", "3")
    assert bad.returncode == 1 and "two call idxs" in bad.stderr


def test_the_byte_cap_is_squall_querys_and_mcps_not_the_apis(tmp_path):
    path = record(PROGRAMS / "wrong_branch.py", tmp_path / "b.sqrec")
    whole = agent.window(squall.load(path), 0, after=30)
    assert "capped" not in whole and len(whole["entries"]) == 31
    r = query(path, "window", "0", "--after", "30", "--max-bytes", "600", "--json")
    assert r.returncode == 0, r.stderr
    cut = json.loads(r.stdout)
    assert 1 < len(cut["entries"]) < 31
    assert f"the answer's size cap kept entries 0..{cut['last']} of 0..30" in cut["capped"]
    assert f"ask `window` at idx 0 (before) or {cut['last']} (after)" in cut["capped"]
    r = query(path, "window", "0", "--after", "30", "--json")  # the default cap: 6000 bytes
    assert len(r.stdout.encode()) < 8192


def test_writes_of_all_threads_come_in_the_order_they_happened(tmp_path):
    """race.py: worker-b writes hits['home'] = 1 first, then worker-a writes 1 over it. The API
    and `squall query writes` list them in that order across threads, and worker-a's old value
    is worker-b's write (its thread and idx), not worker-a's own stale view."""
    path = record(PROGRAMS / "race.py", tmp_path / "race.sqrec")
    rec = squall.load(path)
    names = {t["thread_id"]: t["thread_name"] for t in rec.flow_threads_info(0)}
    ws = rec.writes(attr_or_key="home")["writes"]
    assert [(names[w["thread_id"]], w["old"], w["new"], w["old_from"]) for w in ws] == [
        ("worker-b", 0, 1, "recorded state"),
        ("worker-a", 1, 1, "previous write"),
    ]
    assert (ws[1]["old_thread_id"], ws[1]["old_idx"]) == (ws[0]["thread_id"], ws[0]["idx"])
    assert ws[0]["old_thread_id"] is None
    text = query(path, "writes", "home").stdout.splitlines()
    assert text[0] == "2 write(s); showing 2"
    assert "thread worker-b(" in text[1] and ": 0 -> 1" in text[1]
    assert f"1 (written by thread worker-b at idx {ws[0]['idx']}) -> 1" in text[2] and "thread worker-a(" in text[2]
    # One thread alone: only its write, its old value still the other thread's write.
    only_a = rec.writes(attr_or_key="home", thread_id=ws[1]["thread_id"])
    assert (only_a["total"], [(w["idx"], w["old_thread_id"]) for w in only_a["writes"]]) == (
        1,
        [(ws[1]["idx"], ws[0]["thread_id"])],
    )


def test_writes_reads_type_dot_attribute_as_a_person_names_it(tmp_path):
    """mutation.py: "where was Item.price changed" asked as `writes Item.price` finds the writes
    to attribute price of Item objects (it found none: no key is the text 'Item.price'), and
    says how it read the name; a dict key with a dot in it is still matched as itself first."""
    path = record(PROGRAMS / "mutation.py", tmp_path / "m.sqrec")
    rec = squall.load(path)
    dotted = agent.writes(rec, "Item.price")
    plain = agent.writes(rec, "price", type_name="Item")
    assert dotted["total"] == plain["total"] == 3
    assert dotted["writes"] == plain["writes"]
    assert dotted["read_as"] == "read 'Item.price' as attribute 'price' of objects of type 'Item'"
    assert "read_as" not in plain
    assert [w["new"] for w in dotted["writes"]] == ["2.0", "4.0", "1.0"]
    text = query(path, "writes", "Item.price").stdout.splitlines()
    assert text[0].startswith("3 write(s); showing 3 (read 'Item.price' as attribute 'price'")
    assert text[3].endswith("mutation.py:18") and "2.0 -> 1.0" in text[3]
    keyed = tmp_path / "keyed.py"
    keyed.write_text("def main():\n    d = {}\n    d['a.b'] = 1\n\n\nmain()\n")
    own = agent.writes(squall.load(record(keyed, tmp_path / "k.sqrec")), "a.b")
    assert (own["total"], "read_as" in own) == (1, False)


class _CountingDerefs:
    """A recording's engine object that counts the values built (`deref`)."""

    def __init__(self, b):
        self._inner = b
        self.derefs = 0

    def deref(self, ref):
        self.derefs += 1
        return self._inner.deref(ref)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_calls_where_builds_no_value_in_python(tmp_path, monkeypatch):
    prog = tmp_path / "pick.py"
    prog.write_text(
        textwrap.dedent("""
        def pick(a, big):
            return a * 2

        for i in range(6):
            pick(i % 3, list(range(500)))
    """)
    )
    rec = squall.load(record(prog, tmp_path / "pick.sqrec"))
    counting = _CountingDerefs(rec._b)
    monkeypatch.setattr(rec, "_b", counting)
    # The core filters (`Recording.calls_where`): no value is built in Python for it.
    got = agent.calls(rec, "pick", where="a == 2", limit=0)
    assert (got["total"], counting.derefs) == (2, 0)
    got = agent.calls(rec, "pick", where="ret == 0", limit=0)
    assert (got["total"], counting.derefs) == (2, 0)
    got = agent.calls(rec, "pick", where="big[3] == 3 and a == 1 and 0 <= a < 2", limit=1)
    assert got["total"] == 2 and got["calls"][0]["args"]["a"] == "1"
    # `big` was cut to 100 items by the snapshot budget: its length is known, its end is not.
    assert agent.calls(rec, "pick", where="len(big) == 500 and big[-500] == 0", limit=0)["total"] == 6
    got = agent.calls(rec, "pick", where="big[-1] == 499", limit=0)
    assert got["total"] == 0 and got["undecided"].startswith("6 call(s) not counted"), got
    assert "snapshot budget cut" in got["undecided"], got
    assert agent.calls(rec, "pick", where="big[-1] == 499 or a == 0", limit=0)["total"] == 2
    with pytest.raises(agent.AgentError, match="its names are a, big, raised, ret"):
        agent.calls(rec, "pick", where="b == 1")


def test_arg_refs_name_each_argument_as_deref_of_the_args_ref_builds_them(branch):
    tid = branch.all_threads()[0][1]
    call = branch._b.find_fn_call_entry(0, tid, "__main__", "shipping_cost", None, 0, False)
    refs = branch._b.arg_refs(call["fn_args_ref"])
    assert [branch.deref_val_id(r) for r in refs] == branch.deref_val_id(call["fn_args_ref"]) == [1]
    with pytest.raises(KeyError, match=f"value ref {refs[0]} does not name a call's arguments"):
        branch._b.arg_refs(refs[0])
