"""The UI server's custom power step (`/api/power_step?how=predicate`: the agent's predicate
language over an entry's value, run by Python for a file and for the live program alike) and the
gutter's hit count of a call statement's line (`/api/lines`), over a recording file served by
`squall open`'s engine call and over the live program (`squall.api.local_connect()`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

SQUALL = str(Path(sys.executable).parent / "squall")

PROGRAM = textwrap.dedent("""\
    def log(acc, v):
        acc.append(v)


    def main():
        acc = []
        total = 0
        for i in range(5):
            log(acc, i)
            total = total + i
        prices = {"a": 3.5, "b": -1.0}
        return total, acc, prices
    """)
CALL_LINE = 9  # `log(acc, i)`: a call statement


def _get(base: str, route: str, **params) -> tuple[int, dict]:
    base_url, token = base.split("?token=")
    q = urllib.parse.urlencode({"token": token, **params})
    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/api/{route}?{q}", timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _step(url: str, pred: str, idx: int = 0, direction: str = "next") -> tuple[int, dict]:
    return _get(url, "power_step", tl=0, idx=idx, how="predicate", pred=pred, dir=direction)


def _value(url: str, idx: int) -> tuple[dict, str]:
    _, e = _get(url, "entry", tl=0, idx=idx)
    v = e["entry"]["value"] if "entry" in e else e["value"]
    _, full = _get(url, "value", tl=0, v=v["v"], level=5, length=100)
    return e, full["repr"]


def _check(url: str) -> dict:
    """What the server answers, checked the same way for a file and for the live program."""
    got = {}
    _, lines = _get(url, "lines", tl=0, file="prog.py")
    got["call line hits"] = lines["lines"].get(str(CALL_LINE))
    assert got["call line hits"] == 5, lines  # the call statement ran 5 times

    status, r = _step(url, "name == 'total' and v >= 6")
    assert status == 200, r
    e, text = _value(url, r["idx"])
    assert text == "6" and "total" in json.dumps(e), (e, text)
    got["total >= 6"] = r["idx"]
    # nothing before it matches: it is the first
    assert _step(url, "name == 'total' and v >= 6", r["idx"], "prev")[1]["idx"] is None
    # the next match is later (total = 10)
    nxt = _step(url, "name == 'total' and v >= 6", r["idx"])[1]["idx"]
    assert nxt > r["idx"] and _value(url, nxt)[1] == "10"

    status, r = _step(url, "kind == 'bind' and name == 'prices' and v['b'] < 0 and len(v) == 2")
    assert status == 200 and r["idx"] is not None, r
    got["prices"] = r["idx"]
    assert _step(url, "type_name(v) == 'Invoice'")[1] == {"idx": None, "stopped_at": None}

    status, r = _step(url, "v >")
    assert status == 400 and "'v >'" in r["error"] and "v > 3" in r["error"], r
    status, r = _step(url, "w > 1")
    assert status == 400 and "'w > 1' names 'w'" in r["error"] and "fn, kind, name, v" in r["error"], r
    status, r = _step(url, "__import__('os').system('true')")
    assert status == 400 and "__import__" in r["error"], r
    status, r = _step(url, "'JP'")
    assert status == 400 and "\"'JP'\" reads none of the entry's names" in r["error"], r
    assert "text:'JP'" in r["error"], r
    status, r = _step(url, "  ")
    assert status == 400 and "pred is empty" in r["error"], r
    status, r = _get(url, "power_step", tl=0, idx=0, how="pred")
    assert status == 400 and "same-frame, text or predicate" in r["error"], r
    return got


def test_predicates_and_call_line_hits_over_a_file_and_live_alike(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM + "\nmain()\n")
    rec = tmp_path / "prog.sqrec"
    r = subprocess.run([SQUALL, "run", "-q", "-o", str(rec), str(prog)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    from squall import _engine

    from_file = _check(_engine.serve_file(str(rec)))

    script = tmp_path / "live.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys
        import squall
        from squall._instrument import rewrite
        squall.api.start_recording(install_hook=False)
        ns = {{"__name__": "prog"}}
        exec(rewrite.compile_instrumented({PROGRAM!r}, {str(prog)!r}, "prog", mode="full"), ns)
        ns["main"]()
        print(squall.api.local_connect(), flush=True)
        sys.stdin.readline()
    """)
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = proc.stdout.readline().strip()
        assert url, proc.stderr.read()
        live = _check(url)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    # The same entries: the live recording holds only main's call (no module-level code ran).
    assert live == from_file, (live, from_file)


PARITY_PROGRAM = textwrap.dedent("""\
    class Item:
        def __init__(self, name, price):
            self.name = name
            self.price = price


    def value(i):
        kinds = [
            i,
            -i / 2,
            "JP-%d" % i,
            "x" * (1500 + i),
            list(range(i * 40)),
            Item("n%d" % i, i * 1.5),
            {"k": i, "tag": "JP" if i % 2 else "DE"},
            None,
            (i, "a"),
        ]
        if i == 13:
            raise ValueError("unlucky %d" % i)
        return kinds[i % len(kinds)]


    for i in range(30):
        try:
            value(i)
        except ValueError:
            pass
    """)

# Predicates over a value, written with `ret` (the agent's calls --where) and `v` (the UI's
# step), with the calls (their `i`) each holds for, and how many it cannot decide for: the
# budget cut the long strings (i % 9 == 3) and lists (4, 22), and what their cut part decides
# is undecided, never taken as true or false.
PARITY_PREDICATES = [
    ("ret > 3", [9, 18, 27], 0),  # unlike values (strings, None, objects) are not greater
    ("0 < ret <= 20", [9, 18], 0),
    ("ret != 'JP-2' and type_name(ret) == 'str'", [3, 11, 12, 20, 21, 29], 0),
    ("'JP' in ret", [2, 11, 20, 29], 5),
    ("'JP' in str(ret)", [2, 11, 15, 20, 29], 5),
    ("len(ret) > 50", [3, 4, 12, 21, 22], 0),
    ("ret[-1] == 159", [], 5),
    ("ret[0] == 0 and len(ret) >= 40", [4, 22], 0),
    ("ret.price > 2", [5, 14, 23], 0),
    ("'Item' in str(ret) and ret.name != 'n5'", [14, 23], 0),
    ("ret['tag'] == 'JP' or ret is None", [15], 0),  # None['tag'] raises in Python: false
    ("ret.tag == 'DE'", [6, 24], 0),
    ("-ret > 2", [10, 19, 28], 0),
    ("abs(ret) % 2 == 1", [9, 10, 27], 0),
    ("ret == (8, 'a') or ret[1] == 'a'", [8, 17, 26], 0),
]


def test_the_agents_calls_where_and_the_ui_predicate_step_agree(tmp_path):
    """The same predicate over a function's return value, asked as `calls value --where P(ret)`
    and stepped through with the UI's `kind == 'fn-return' and fn == 'value' and P(v)`, finds
    the same calls: values cut by the snapshot budget (long strings and lists), objects, unlike
    values, chained comparisons and negative indexes included."""
    import squall
    from squall import _engine, agent

    prog = tmp_path / "values.py"
    prog.write_text(PARITY_PROGRAM)
    rec_path = tmp_path / "values.sqrec"
    r = subprocess.run(
        [SQUALL, "run", "-q", "-o", str(rec_path), str(prog)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    rec = squall.load(rec_path)
    fid, tid = rec.all_threads()[0]
    url = _engine.serve_file(str(rec_path))
    for pred, holds_for, undecided in PARITY_PREDICATES:
        got = agent.calls(rec, "value", where=pred, limit=100)
        assert [int(c["args"]["i"]) for c in got["calls"]] == holds_for, pred
        assert got.get("undecided", "0 call(s)").startswith(f"{undecided} call(s)"), (pred, got)
        by_agent = [c["idx"] for c in got["calls"]]
        stepped, idx = [], 0
        while True:
            status, r = _step(url, f"kind == 'fn-return' and fn == 'value' and ({pred.replace('ret', 'v')})", idx)
            assert status == 200, (pred, r)
            if r["idx"] is None:
                assert r["stopped_at"] is None, r
                break
            stepped.append(rec._b.entry(fid, tid, r["idx"])["fn_call_idx"])
            idx = r["idx"]
        assert stepped == by_agent, pred
