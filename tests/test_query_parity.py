"""The UI's API and the Python API give the same answers: every corpus program
(``tests/programs/*.py`` and the bundled example) is recorded to a file, which is opened with
``squall.load`` and served by the UI server (``_engine.serve_file``); exceptions, bookmarks,
calls per function, stepping (next-over, prev-over, next-out, prev-out), power stepping, loops,
goto file:line, every recorded value printed with print level/length, the multi-thread order
(every flow's entries merged across threads, paged) and the value search (the agents' `search`
against the UI's `/api/search`) are asked of both and compared. Both call the same core queries
(``crates/squall_trace``): this test catches a front end that answers on its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import squall
from squall import _engine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SQUALL = Path(sys.executable).parent / "squall"
CORPUS = sorted((HERE / "programs").glob("*.py")) + [ROOT / "examples" / "invoices" / "main.py"]
# Entries per thread whose stepping answers are compared (spread over the whole timeline).
SAMPLE = 60


def _env() -> dict:
    env = dict(os.environ)
    for k in ("PYTHONPATH", "SQUALL_INCLUDE", "SQUALL_SKIP", "SQUALL_SKIP_REGEX", "SQUALL_MODE"):
        env.pop(k, None)
    env["PYTHONHASHSEED"] = "0"
    return env


class Ui:
    """The UI server over one recording file."""

    def __init__(self, path: Path) -> None:
        url = _engine.serve_file(str(path))
        self.base, self.token = url.split("?token=")

    def get(self, route: str, **params) -> dict:
        q = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        req = urllib.request.Request(f"{self.base}api/{route}?{q}", headers={"x-squall-token": self.token})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)


@pytest.fixture(scope="module", params=CORPUS, ids=lambda p: p.stem)
def recorded(request, tmp_path_factory):
    prog: Path = request.param
    out = tmp_path_factory.mktemp(prog.stem) / "rec.sqrec"
    subprocess.run(
        [str(SQUALL), "run", "-q", "-o", str(out), str(prog)],
        cwd=str(prog.parent),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), f"{prog.name} left no recording"
    rec = squall.load(out)
    ui = Ui(out)
    tls = [(f["flow"], t["thread_id"]) for f in ui.get("flows")["flows"] for t in f["threads"]]
    return rec, ui, tls


def _sample(n: int) -> list:
    if n <= SAMPLE:
        return list(range(n))
    return sorted({round(i * (n - 1) / (SAMPLE - 1)) for i in range(SAMPLE)})


def test_exceptions_are_the_same(recorded):
    rec, ui, tls = recorded
    api = ui.get("exceptions", limit=1000)
    assert api["capped"] is False
    from_ui = [
        (
            tls[x["tl"]],
            x["idx"],
            x["raised_idx"],
            x["fn_call_idx"],
            [(c["idx"], c["unwind_idx"]) for c in x["chain"]],
            x["caught_in"] and x["caught_in"]["idx"],
            x["type"],
            x["message"],
        )
        for x in api["items"]
    ]
    from_py = [
        (
            (x["flow_id"], x["thread_id"]),
            x["idx"],
            x["raised_idx"],
            x["fn_call_idx"],
            [tuple(c) for c in x["chain"]],
            x["caught_in_idx"],
            x["exc_type"],
            x["message"],
        )
        for x in rec.exceptions()
    ]
    assert from_ui == from_py


def test_bookmarks_and_calls_per_function_are_the_same(recorded):
    rec, ui, tls = recorded
    marks = ui.get("bookmarks")["items"]
    assert [((m["flow"], m["thread"]), m["idx"], m["note"]) for m in marks] == [
        ((b["flow_id"], b["thread_id"]), b["idx"], str(b["note"])) for b in squall.bookmarks(rec)
    ]
    # By form: several lambdas of a module share a name.
    from_ui = Counter({s["id"]: s["count"] for s in ui.get("fn_stats")})
    from_py = Counter()
    for fid in rec.all_flows():
        for s in rec.fn_call_stats(fid):
            from_py[s["form_id"]] += s["cnt"]
    assert from_ui == from_py


def test_stepping_is_the_same(recorded):
    rec, ui, tls = recorded
    for tl, (fid, tid) in enumerate(tls):
        n = rec.timeline_count(fid, tid)
        for idx in _sample(n):
            for drift in ("next-over", "prev-over", "next-out", "prev-out"):
                want = rec.timeline_entry(fid, tid, idx, drift)["idx"]
                assert ui.get("entry", tl=tl, idx=idx, drift=drift)["idx"] == want, (tl, idx, drift)


def test_power_stepping_and_loops_are_the_same(recorded):
    rec, ui, tls = recorded
    for tl, (fid, tid) in enumerate(tls):
        tline = rec.get_referenced_maps_timeline(fid, tid)
        for idx in _sample(len(tline)):
            e = tline[idx]
            for how in ("coord", "fn", "identity", "equality"):
                if how in ("identity", "equality") and e["type"] in ("fn-call", "fn-resume"):
                    continue
                for d in ("next", "prev"):
                    got = rec.power_step(fid, tid, idx, how, backward=d == "prev")
                    want = ui.get("find", tl=tl, idx=idx, how=how, dir=d)["idx"]
                    assert (got and got["idx"]) == want, (tl, idx, how, d)
            if e["type"] in ("expr", "bind", "write"):
                it = rec.loop_iterations(fid, tid, idx)
                lp = ui.get("loop", tl=tl, idx=idx, around=500)
                assert (lp["count"], lp["pos"]) == (len(it["idxs"]), it["pos"])
                assert [w["idx"] for w in lp["window"]] == it["idxs"][max(0, it["pos"] - 500) : it["pos"] + 501]


def test_goto_line_is_the_same(recorded):
    rec, ui, tls = recorded
    places = {(f["file"], f["line"]) for f in rec._b.forms() if f["file"].startswith(str(ROOT))}
    for fid in rec.all_flows():
        for tid in rec.all_flows()[fid]:
            tline = rec.get_referenced_maps_timeline(fid, tid)
            for idx in _sample(len(tline)):
                e = tline[idx]
                form = next((f for f in rec._b.forms() if f["form_id"] == e["form_id"]), None)
                if e.get("coord") and form:
                    places.add((form["file"], e["coord"][0]))
    assert places
    for file, line in sorted(places):
        api = ui.get("goto", file=file, line=line)
        from_ui = [(tls[h["tl"]], h["idx"], h["count"]) for h in api["hits"]]
        from_py = [
            ((fid, h["thread_id"]), h["idx"], h["count"])
            for fid in sorted(rec.all_flows())
            for h in rec.line_hits(file, line, flow_id=fid)
        ]
        assert from_ui == from_py, (file, line)


# print level / print length pairs the value printing is compared at (the UI's default first).
BOUNDS = [(3, 20), (1, 1), (0, 5), (2, 0), (50, 10_000)]
# The entry-level part of a Python value ref: what the UI calls `v` (crates/squall_python/src/bindings/query.rs).
LOCAL = 0xFFFF_FFFF
#: The bit of a ref naming something an entry holds (a call's args, a write's target, a float).
ARGS_BIT = 1 << 32


def test_value_printing_is_the_same(recorded):
    rec, ui, tls = recorded
    seen = 0
    for tl, (fid, tid) in enumerate(tls):
        refs = {
            e[k]
            for e in rec.get_referenced_maps_timeline(fid, tid)
            for k in ("result_ref", "value_ref", "throwable_ref")
            if e.get(k) is not None
        }
        for ref in sorted(refs):
            for level, length in BOUNDS:
                # A ref shaped as an args ref names a float its entry holds: the UI reads it by idx.
                at = {"idx": ref & LOCAL} if ref & ARGS_BIT else {"v": ref & LOCAL}
                want = ui.get("value", tl=tl, level=level, length=length, **at)["repr"]
                assert rec.val_pprint(ref, print_level=level, print_length=length) == want, (tl, ref, level, length)
            seen += 1
    assert seen > 0


def test_multi_thread_order_is_the_same(recorded):
    rec, ui, tls = recorded
    for fid in sorted(rec.all_flows()):
        total = ui.get("order", flow=fid, limit=1)["total"]
        assert total == sum(rec.timeline_count(fid, tid) for tid in rec.all_flows()[fid])
        for page in (1000, 7):
            from_ui, from_py = [], []
            for start in range(0, min(total, 3 * page), page):
                from_ui += [
                    (tls[x["tl"]], x["idx"]) for x in ui.get("order", flow=fid, start=start, limit=page)["items"]
                ]
                from_py += [((fid, e["thread_id"]), e["idx"]) for e in rec.total_order_timeline(fid, start, page)]
            assert from_ui == from_py, (fid, page)
            assert len(from_py) == min(total, 3 * page)


# Texts the value search is compared with (a digit, a quote, a word, a type's name).
SEARCH_TEXTS = ["1", "'", "none", "Error"]
SEARCH_LIMIT = 3000


def _ui_search(ui: Ui, text: str) -> dict:
    body = json.dumps({"kind": "value", "text": text, "limit": SEARCH_LIMIT}).encode()
    req = urllib.request.Request(
        f"{ui.base}api/search",
        data=body,
        method="POST",
        headers={"x-squall-token": ui.token, "content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        sid = json.load(r)["id"]
    for _ in range(600):
        got = ui.get(f"search/{sid}")
        if got["done"]:
            assert got["error"] is None, got["error"]
            return got
        time.sleep(0.05)
    raise AssertionError(f"the UI's search for {text!r} did not finish")


def test_value_search_is_the_same(recorded):
    """The agents' search (`squall query search`, MCP) and the UI's `/api/search` find the same
    entries, in the same order, naming the same function."""
    from squall import agent

    rec, ui, tls = recorded
    found = 0
    for text in SEARCH_TEXTS:
        from_ui = _ui_search(ui, text)
        from_agent = agent.search(rec, text, limit=SEARCH_LIMIT)
        want = [(tls[m["tl"]][1], m["idx"], m["fn"]) for m in from_ui["matches"]]
        got = [(h["thread_id"], h["idx"], h["fn"]) for h in from_agent["hits"]]
        assert got == want, text
        assert from_agent["complete"] == (not from_ui["capped"] and len(got) < SEARCH_LIMIT), text
        found += len(got)
    assert found > 0
