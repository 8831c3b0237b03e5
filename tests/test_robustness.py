"""Damaged recordings and paths that are not recordings, through every front end that opens a
recording: the Rust reader (``_engine.load_recording``), ``squall info``, ``squall query``,
``squall.load()`` and its queries, the MCP server (driven by the official ``mcp`` client) and the
UI server (``squall open``). The files: a small recorded program cut at 50 offsets and with 200
single bytes flipped (seeded), and special paths (a FIFO, ``/dev/zero``, a directory, a symbolic
link loop, a dangling link, an empty file, a 3 GiB sparse file of zeros, a text file).

Every answer must be either the intact file's answer where the data is there (values the file
did not save shown as missing) or a clear error that names the path; never a traceback, a
panic or a hang (each call has a timeout). The in-process front ends take every file; the ones
that start a process per file (query, MCP, UI) take a fixed sample and the special paths.
"""

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import squall
from squall import _engine, agent
from squall.indexes import SquallWarning

SQUALL = str(Path(sys.executable).parent / "squall")
TIMEOUT = 60  # seconds for one call: far above what any of them takes; hitting it is a hang

PROGRAM = """\
import threading


class Invoice:
    def __init__(self, number, lines):
        self.number = number
        self.lines = lines
        self.total = 0


class Refused(Exception):
    pass


def price(line):
    name, qty, unit = line
    if qty <= 0:
        raise Refused(f"{name}: quantity {qty}")
    return qty * unit


def settle(inv):
    for line in inv.lines:
        try:
            inv.total += price(line)
        except Refused:
            inv.total = -1
    return {"number": inv.number, "total": inv.total, "tags": ["a", "b"]}


def worker(invoices, out):
    for inv in invoices:
        out.append(settle(inv))


def main():
    invoices = [Invoice(i, [("pen", i % 4, 1.5), ("ink", 2, 3)]) for i in range(12)]
    out = []
    t = threading.Thread(target=worker, args=(invoices[6:], out), name="settler")
    t.start()
    worker(invoices[:6], out)
    t.join()
    return out


main()
"""

CUTS = [f"cut{i:02d}" for i in range(50)]
FLIPS = [f"flip{i:03d}" for i in range(200)]
SPECIAL = ["fifo", "device", "directory", "symlink-loop", "dangling-link", "empty", "sparse-zeros", "foreign"]
# What each special path's error says (after the quoted path).
SPECIAL_SAYS = {
    "fifo": "is a FIFO (named pipe), not a recording file",
    "device": "is a character device, not a recording file",
    "directory": "is a directory, not a recording file",
    "symlink-loop": "is a symbolic link loop",
    "dangling-link": "which does not exist): check the path",
    "empty": "is empty",
    "sparse-zeros": "is not a squall recording (it starts with bytes 00 00 00 00",
    "foreign": "is not a squall recording",
}
# The front ends that start a process per file: every 9th cut and every 25th flip, seeded.
SAMPLE = CUTS[::9] + FLIPS[3::25] + SPECIAL
NOT_SAVED = "<value not saved"


def _damaged(good: bytes, case: str) -> bytes:
    n = len(good)
    if case.startswith("cut"):
        i = int(case[3:])
        return good[: (2 * i + 1) * n // 100]  # 50 offsets spread over the file
    rng = random.Random(16)
    flips = [(rng.randrange(n), rng.randrange(1, 256)) for _ in FLIPS]
    at, mask = flips[int(case[4:])]
    b = bytearray(good)
    b[at] ^= mask
    return bytes(b)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The intact recording and every damaged or special path, made once."""
    d = tmp_path_factory.mktemp("robust")
    (d / "corpus.py").write_text(PROGRAM)
    good_path = d / "corpus.sqrec"
    r = subprocess.run(
        [SQUALL, "run", "-q", "-o", str(good_path), str(d / "corpus.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=d,
    )
    assert r.returncode == 0, r.stderr
    good = good_path.read_bytes()
    paths = {}
    for case in CUTS + FLIPS:
        p = d / f"{case}.sqrec"
        p.write_bytes(_damaged(good, case))
        paths[case] = p
    os.mkfifo(d / "fifo.sqrec")
    paths["fifo"] = d / "fifo.sqrec"
    paths["device"] = Path("/dev/zero")
    (d / "dir.sqrec").mkdir()
    paths["directory"] = d / "dir.sqrec"
    os.symlink(d / "loop-b.sqrec", d / "loop-a.sqrec")
    os.symlink(d / "loop-a.sqrec", d / "loop-b.sqrec")
    paths["symlink-loop"] = d / "loop-a.sqrec"
    os.symlink(d / "gone.sqrec", d / "dangling.sqrec")
    paths["dangling-link"] = d / "dangling.sqrec"
    (d / "empty.sqrec").write_bytes(b"")
    paths["empty"] = d / "empty.sqrec"
    with open(d / "zeros.sqrec", "wb") as f:
        f.truncate(3 << 30)  # sparse: no disk used
    paths["sparse-zeros"] = d / "zeros.sqrec"
    (d / "notes.sqrec").write_text("just some notes\n" * 100)
    paths["foreign"] = d / "notes.sqrec"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the intact file loads without a word
        intact = squall.load(good_path)
    return {"dir": d, "good": good_path, "paths": paths, "intact": intact, "rows": _rows(intact)}


def _bounded(fn, *args):
    """``fn(*args)`` in a thread; fails the test if it does not return within TIMEOUT."""
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive(), f"{fn.__name__}{args} hung (no answer in {TIMEOUT} s)"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _clear_error(text: str, path: Path, case: str) -> None:
    """A message for the user: one line, naming the path, no traceback or panic."""
    assert "Traceback" not in text and "panicked" not in text and "RUST_BACKTRACE" not in text, text
    assert f"`{path}`" in text, (case, text)
    if case in SPECIAL_SAYS:
        assert SPECIAL_SAYS[case] in text, (case, text)


def _loadable(corpus, case) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _bounded(squall.load, corpus["paths"][case])
        return True
    except (OSError, ValueError):
        return False


# --- the Rust reader and squall.load() over every file --------------------------------------------


@pytest.mark.parametrize("case", CUTS + FLIPS + SPECIAL)
def test_reader(corpus, case):
    path = corpus["paths"][case]
    try:
        f = _bounded(_engine.load_recording, str(path), None)
    except (OSError, ValueError) as e:
        _clear_error(str(e), path, case)
        assert case not in SPECIAL or isinstance(e, FileNotFoundError) == (case == "dangling-link")
        return
    assert case not in SPECIAL, f"{case} loaded"
    info = f.info()
    assert info["completed"] or info["cut_short"]
    assert info["entries"] <= corpus["intact"].info()["entries"]


def _rows(rec):
    """Every entry of every thread with its values as previews: {(flow, thread): [row]}."""
    out = {}
    for flow, threads in rec.all_flows().items():
        for tid in threads:
            rows = []
            for e in rec.get_referenced_maps_timeline(flow, tid):
                row = {k: v for k, v in e.items() if not k.endswith("_ref") and k != "ret_idx"}
                for k, v in e.items():
                    if k.endswith("_ref") and v is not None:
                        row[k] = agent.preview(rec.deref_val_id(v))
                rows.append(row)
            out[(flow, tid)] = rows
    return out


def _ask(fn, *args, **kwargs):
    """An answer, or None when the file holds nothing to ask about (said as such)."""
    try:
        return fn(*args, **kwargs)
    except agent.AgentError as e:
        assert "the recording is empty: no flow has any entry (the file is cut short before any: " in str(e), e
        return None


def _same_or_not_saved(got, want, where):
    if got == want:
        return
    assert NOT_SAVED in str(got), f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("case", CUTS + FLIPS + SPECIAL)
def test_load_and_queries(corpus, case):
    path = corpus["paths"][case]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            rec = _bounded(squall.load, path)
        except (OSError, ValueError) as e:
            _clear_error(str(e), path, case)
            assert not said, [str(w.message) for w in said]
            return
        assert case not in SPECIAL, f"{case} loaded"
        rows = _rows(rec)
        summary = agent.summary(rec)
        exceptions = _ask(agent.exceptions, rec)
        calls = _ask(agent.calls, rec, "price", limit=100)
        writes = _ask(agent.writes, rec, "total", limit=100)
        found = _ask(agent.search, rec, "quantity", limit=100)
        _ask(agent.frequencies, rec)
        for (flow, tid), tl in rows.items():
            if tl:
                agent.window(rec, len(tl) // 2, flow=flow, thread=tid)
                agent.stack(rec, len(tl) - 1, flow=flow, thread=tid)
                agent.bindings(rec, len(tl) - 1, flow=flow, thread=tid)
    info = rec.info()
    messages = [str(w.message) for w in said if issubclass(w.category, SquallWarning)]
    if info["completed"]:
        assert messages == []
    else:
        # Once, saying where it was cut and what loaded.
        assert len(messages) == 1, messages
        assert re.search(
            r"is cut short \(\d+ bytes\): (truncated chunk at byte \d+|corrupt chunk at byte \d+|no end "
            r"marker)",
            messages[0],
        ), messages[0]
        assert f"Loaded what comes before: {info['entries']} entries" in messages[0]
    # Where the data is there, the same answers as the intact file.
    want = corpus["rows"]
    for key, tl in rows.items():
        full = want[key]
        assert len(tl) <= len(full), key
        for got, exp in zip(tl, full):
            where = f"{key} idx {exp['idx']}"
            for k, v in exp.items():
                if k.endswith("_ref"):
                    if k in got:
                        _same_or_not_saved(got[k], v, f"{where} {k}")
                else:
                    assert got.get(k) == v, f"{where} {k}: {got.get(k)!r} != {v!r}"
    intact = agent.summary(corpus["intact"])
    assert summary["entries"] <= intact["entries"]
    known = {(e["thread_id"], e["idx"]): e for e in agent.exceptions(corpus["intact"])["exceptions"]}
    for e in exceptions["exceptions"] if exceptions else []:
        exp = known[(e["thread_id"], e["idx"])]
        assert e["exception"] in (exp["exception"], agent._NOT_SAVED_EXC), e
        assert e["fn"] == exp["fn"]
    full_writes = {(w["thread_id"], w["idx"]): w for w in agent.writes(corpus["intact"], "total", limit=100)["writes"]}
    for w in writes["writes"] if writes else []:
        exp = full_writes[(w["thread_id"], w["idx"])]
        _same_or_not_saved(w["new"], exp["new"], f"write {w['idx']} new")
        if (w["old"], w["old_from"]) != (exp["old"], exp["old_from"]):
            # What came before was in the part of the file that was lost: said so, not "never recorded".
            assert w["old_from"] == "unknown (not saved: the recording was cut short)" or NOT_SAVED in str(w["old"]), (
                w,
                exp,
            )
    full_found = {
        (h["thread_id"], h["idx"], h["in"]) for h in agent.search(corpus["intact"], "quantity", limit=100)["hits"]
    }
    assert {(h["thread_id"], h["idx"], h["in"]) for h in found["hits"]} <= full_found if found else True
    full_calls = {(c["thread_id"], c["idx"]): c for c in agent.calls(corpus["intact"], "price", limit=100)["calls"]}
    for c in calls["calls"] if calls else []:
        exp = full_calls[(c["thread_id"], c["idx"])]
        for k, v in c["args"].items():
            _same_or_not_saved(v, exp["args"][k], f"price call {c['idx']} arg {k}")


# --- the command line: squall info over every file, squall query over a sample ----------------------


def _run(args):
    try:
        p = subprocess.run([SQUALL, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    return p


@pytest.fixture(scope="module")
def info_runs(corpus):
    """``squall info`` over every path, four at a time (a process each)."""
    cases = CUTS + FLIPS + SPECIAL
    with ThreadPoolExecutor(4) as pool:
        runs = pool.map(lambda c: _run(["info", corpus["paths"][c]]), cases)
        return dict(zip(cases, runs))


@pytest.mark.parametrize("case", CUTS + FLIPS + SPECIAL)
def test_squall_info(corpus, info_runs, case):
    p = info_runs[case]
    path = corpus["paths"][case]
    assert p is not None, f"squall info {path} hung"
    _no_crash(p.stderr)
    if p.returncode == 1:
        assert p.stdout == ""
        assert p.stderr.startswith("squall: ") and p.stderr.count("\n") == 1, p.stderr
        _clear_error(p.stderr, path, case)
        assert not _loadable(corpus, case)
        return
    assert p.returncode == 0, p.stderr
    assert case not in SPECIAL
    assert p.stderr == ""  # the status line says a cut file is cut short
    assert re.search(r"^status     (completed|CUT SHORT: .*byte \d+|CUT SHORT: no end marker)", p.stdout, re.M), (
        p.stdout
    )


def _no_crash(stderr):
    assert "Traceback" not in stderr and "panicked" not in stderr, stderr


QUERIES = [["summary"], ["exceptions"], ["calls", "price", "--limit", "50"], ["frequencies"], ["window", "5"]]


@pytest.fixture(scope="module")
def intact_queries(corpus):
    return {q[0]: json.loads(_run(["query", corpus["good"], *q, "--json"]).stdout) for q in QUERIES}


@pytest.mark.parametrize("case", SAMPLE)
def test_squall_query(corpus, intact_queries, case):
    path = corpus["paths"][case]
    loads = _loadable(corpus, case)
    with ThreadPoolExecutor(len(QUERIES)) as pool:
        runs = list(pool.map(lambda q: _run(["query", path, *q, "--json"]), QUERIES))
    for q, p in zip(QUERIES, runs):
        assert p is not None, f"squall query {path} {q} hung"
        _no_crash(p.stderr)
        if not loads:
            assert p.returncode == 1 and p.stdout == "", (q, p.stderr)
            _clear_error(p.stderr, path, case)
            continue
        if p.returncode == 1:  # a question the loaded part cannot answer (idx 5 of an empty thread)
            assert p.stderr.startswith("squall"), (q, p.stderr)
            continue
        assert p.returncode == 0, (q, p.stderr)
        answer = json.loads(p.stdout)
        intact = intact_queries[q[0]]
        if q[0] == "summary":
            assert answer["entries"] <= intact["entries"]
            assert answer["completed"] or answer["cut_short"]
        if q[0] == "exceptions":
            known = {(e["thread_id"], e["idx"]): e["exception"] for e in intact["exceptions"]}
            for e in answer["exceptions"]:
                assert e["exception"] in (known[(e["thread_id"], e["idx"])], agent._NOT_SAVED_EXC), e
        if not answer.get("completed", True):
            assert "is cut short" in p.stderr


@pytest.mark.parametrize("case", SAMPLE)
def test_squall_export(corpus, case, tmp_path):
    import sqlite3

    path = corpus["paths"][case]
    loads = _loadable(corpus, case)
    for fmt, out in (("sqlite", tmp_path / "x.sqlite"), ("chrome", tmp_path / "x.json")):
        p = _run(["export", "--format", fmt, "-o", out, path])
        assert p is not None, f"squall export {path} hung"
        _no_crash(p.stderr)
        if not loads:
            assert p.returncode == 1 and p.stdout == "" and not out.exists(), p.stderr
            _clear_error(p.stderr, path, case)
            continue
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == str(out)
        if fmt == "sqlite":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                entries = squall.load(path).info()["entries"]
            with sqlite3.connect(out) as db:
                assert db.execute("select count(*) from entries").fetchone()[0] == entries
        else:
            assert isinstance(json.loads(out.read_text()), (dict, list))


# --- the MCP server, through the official client ----------------------------------------------------


MCP_TOOLS = [
    ("summary", {}),
    ("exceptions", {"limit": 20}),
    ("calls", {"fn": "price", "limit": 50}),
    ("frequencies", {"limit": 30}),
    ("window", {"idx": 5}),
]


def _mcp_session(path):
    import anyio
    import mcp
    from mcp.client.stdio import stdio_client

    async def go():
        params = mcp.StdioServerParameters(command=SQUALL, args=["mcp", str(path)])
        answers = {}
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as streams:
                async with mcp.ClientSession(streams[0], streams[1]) as s:
                    await s.initialize()
                    for name, args in MCP_TOOLS:
                        r = await s.call_tool(name, args)
                        err = r.isError if hasattr(r, "isError") else r.is_error
                        answers[name] = (err, r.content[0].text)
        return answers

    return anyio.run(go)


@pytest.mark.parametrize("case", SAMPLE)
def test_mcp_server(corpus, case):
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (the mcp extra needs Python 3.10+)")
    path = corpus["paths"][case]
    if not _loadable(corpus, case):
        p = _run(["mcp", path])
        assert p is not None, f"squall mcp {path} hung"
        assert p.returncode == 1 and p.stdout == "", p.stderr
        assert p.stderr.startswith("squall mcp: ")
        _clear_error(p.stderr, path, case)
        return
    answers = _bounded(_mcp_session, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = squall.load(path)
    for name, args in MCP_TOOLS:
        err, text = answers[name]
        if err:  # only a question the loaded part cannot answer, with the reason squall gives in-process
            with pytest.raises(agent.AgentError) as why:
                getattr(agent, name)(rec, **args)
            assert text.endswith(str(why.value)), text
            continue
        expect = getattr(agent, name)(rec, **args)  # what the tool answers in-process
        assert json.loads(text) == json.loads(json.dumps(expect, ensure_ascii=False)), name


def test_mcp_errors_carry_the_reason(corpus, monkeypatch):
    """A tool that fails inside squall says why, not only "Error executing tool"."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (the mcp extra needs Python 3.10+)")
    import anyio
    from squall import mcp_server

    def broken(rec):
        raise KeyError("value slot 7 is gone")

    monkeypatch.setattr(agent, "summary", broken)
    server = mcp_server.build_server(corpus["intact"])
    with pytest.raises(Exception) as err:
        anyio.run(server.call_tool, "summary", {})
    assert "squall failed to answer `summary` (KeyError: 'value slot 7 is gone')" in str(err.value)


# --- the UI server (squall open) ----------------------------------------------------------------


UI_ROUTES = ["flows", "forms", "fn_stats?tl=0", "exceptions", "entries?tl=0&limit=1000", "frame?tl=0&idx=0"]


@pytest.mark.parametrize("case", SAMPLE)
def test_ui_server(corpus, case):
    path = corpus["paths"][case]
    proc = subprocess.Popen(
        [SQUALL, "open", "--no-browser", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = _bounded(proc.stdout.readline)
        if not line:
            proc.wait(timeout=TIMEOUT)
            err = proc.stderr.read()
            _no_crash(err)
            assert proc.returncode == 1, err
            assert err.startswith("squall open: ")
            _clear_error(err, path, case)
            assert not _loadable(corpus, case)
            return
        assert case not in SPECIAL
        url = line.split("squall UI: ", 1)[1].strip()
        said = _bounded(proc.stderr.readline)
        if not _bounded(_engine.load_recording, str(path), None).info()["completed"]:
            assert said.startswith(f"squall open: the recording `{path}` is cut short: "), said
        else:
            assert said == "(Ctrl-C stops it)\n", said
        base, token = url.split("?token=")
        for route in UI_ROUTES:
            sep = "&" if "?" in route else "?"
            try:
                with urllib.request.urlopen(f"{base.rstrip('/')}/api/{route}{sep}token={token}", timeout=TIMEOUT) as r:
                    body = json.loads(r.read())
            except urllib.error.HTTPError as e:
                # A clear 4xx (no thread 0 in a file cut before it): never a 5xx.
                assert 400 <= e.code < 500, (route, e.code)
                assert json.loads(e.read())["error"], route
                continue
            if route == "flows":
                assert body["info"]["completed"] or body["info"]["cut_short"]
                intact = {t["thread_id"]: t["entries"] for t in corpus["intact"].flow_threads_info(0)}
                for f in body["flows"]:
                    for t in f["threads"]:
                        assert t["len"] <= intact[t["thread_id"]], t
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        proc.stdout.close()
        proc.stderr.close()
