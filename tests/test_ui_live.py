"""The UI over a live recording (`squall.api.local_connect()`) and after a run (`squall run --ui`):
URL with a token, 401 without it, the recording readable through the API, the program unharmed."""

import json
import re
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

SQUALL = str(Path(sys.executable).parent / "squall")


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def api_url(url, route):
    base, token = url.split("?token=")
    return f"{base.rstrip('/')}/api/{route}?token={token}"


def test_local_connect_serves_the_live_recording(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent("""
        import sys, threading
        import squall
        squall.api.start_recording(install_hook=False)
        from squall._instrument import rewrite
        ns = {"__name__": "app"}
        exec(rewrite.compile_instrumented("def handle(n):\\n    return n * 2\\n", "app.py", "app"), ns)
        ns["handle"](1)
        url = squall.api.local_connect()
        print(url, flush=True)
        for line in sys.stdin:          # keeps serving "requests" while the UI is up
            ns["handle"](int(line))
            print("handled", flush=True)
        print(squall.api.engine_stats()["entries"], flush=True)
    """)
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = proc.stdout.readline().strip()
        assert re.match(r"http://127\.0\.0\.1:\d+/\?token=\w+", url), url
        flows = get(api_url(url, "flows"))
        assert flows, flows
        base = url.split("?token=")[0].rstrip("/")
        try:
            urllib.request.urlopen(f"{base}/api/flows", timeout=30)
            raise AssertionError("no token must be refused")
        except urllib.error.HTTPError as e:
            assert e.code == 401
        stats = get(api_url(url, "fn_stats") + "&tl=0")
        assert "handle" in json.dumps(stats)
        proc.stdin.write("5\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "handled"
        proc.stdin.close()
        entries = int(proc.stdout.readline())
        assert entries == 4  # two calls, two returns: recording went on after the UI read it
    finally:
        proc.kill()
        proc.wait()


def test_run_ui_serves_the_recording_after_the_program(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("def f(x):\n    return x + 1\nprint(f(1))\n")
    proc = subprocess.Popen(
        [SQUALL, "run", "--ui", "--no-browser", "-o", "p.sqrec", str(script)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == "2\n"
        url = None
        deadline = time.time() + 60
        while url is None and time.time() < deadline:
            line = proc.stderr.readline()
            m = re.search(r"squall UI: (\S+)", line)
            if m:
                url = m.group(1)
        assert url, "no UI URL printed"
        assert "f" in json.dumps(get(api_url(url, "fn_stats") + "&tl=0"))
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def post(url, route, body=None):
    req = urllib.request.Request(
        api_url(url, route),
        data=json.dumps(body).encode() if body is not None else b"",
        method="POST",
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_live_controls_and_runtime_instrumentation(tmp_path):
    """Through the API: stop/start/clear recording, the modules browser, instrumenting a module of
    the running program (its calls get recorded), uninstrumenting it, the multi-thread timeline."""
    (tmp_path / "shop.py").write_text(
        "def price(n):\n    return n * 3\n\nclass Cart:\n    def total(self, n):\n        return price(n) + 1\n"
    )
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent("""
        import sys, threading
        import squall
        import shop                      # imported before recording: not instrumented
        squall.api.start_recording(install_hook=False)
        from squall._instrument import rewrite
        ns = {"__name__": "app"}
        exec(rewrite.compile_instrumented("def handle(n):\\n    return n * 2\\n", "app.py", "app"), ns)
        ns["handle"](1)
        t = threading.Thread(target=ns["handle"], args=(2,), name="worker"); t.start(); t.join()
        ns["handle"](3)
        print(squall.api.local_connect(), flush=True)
        for line in sys.stdin:
            n = int(line)
            ns["handle"](n)
            shop.Cart().total(n)
            print("handled", flush=True)
    """)
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )

    def handle(n):
        proc.stdin.write(f"{n}\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "handled"

    def entries():
        s, st = post(url, "control/status")
        assert s == 200, st
        return st["entries"]

    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), proc.stderr.read() if proc.poll() is not None else url
        # Token-checked like every route.
        base = url.split("?token=")[0].rstrip("/")
        req = urllib.request.Request(f"{base}/api/control/stop", data=b"", method="POST")
        try:
            urllib.request.urlopen(req, timeout=30)
            raise AssertionError("no token must be refused")
        except urllib.error.HTTPError as e:
            assert e.code == 401

        # The multi-thread timeline: main, worker, main, in recording order.
        flows = get(api_url(url, "flows"))
        assert flows["live"] is True
        order = get(api_url(url, "order") + "&flow=0&fns=1")
        assert order["marks"] is True
        threads = [i["thread"] for i in order["items"] if i["type"] == "fn-call"]
        assert threads == ["MainThread", "worker", "MainThread"], threads

        s, st = post(url, "control/status")
        assert s == 200 and st["recording"] is True and st["entries"] == 6, st
        # Stop: calls are not recorded; start: they are again.
        assert post(url, "control/stop")[1]["recording"] is False
        handle(4)
        assert entries() == 6
        assert post(url, "control/start")[1]["recording"] is True
        handle(5)
        assert entries() == 8
        # Clear forgets everything.
        assert post(url, "control/clear")[1]["entries"] == 0

        # The modules browser: shop is loaded, not instrumented, with the reason.
        s, mods = post(url, "control/modules")
        assert s == 200
        shop = next(m for m in mods["modules"] if m["name"] == "shop")
        assert shop["instrumented"] is False and "shop" in shop["reason"], shop
        s, fns = post(url, "control/functions", {"module": "shop"})
        assert s == 200, fns
        assert [(f["qualname"], f["instrumented"]) for f in fns["functions"]] == [
            ("price", False),
            ("Cart.total", False),
        ]

        # Instrument shop at runtime: its calls are recorded from now on.
        s, rep = post(url, "control/instrument", {"target": "shop"})
        assert s == 200, rep
        assert set(rep["swapped"]) == {"shop.price", "shop.Cart.total"}, rep
        assert (
            any("module-level code" in r or "reload" in r for r in rep["reload_needed"]) or rep["reload_needed"] == []
        ), rep
        assert "instrumented 2 function(s)" in rep["text"]
        before = entries()
        handle(6)
        with_price = entries() - before
        stats = json.dumps(get(api_url(url, "fn_stats") + "&tl=0"))
        assert "shop.price" in stats and "Cart.total" in stats, stats
        s, fns = post(url, "control/functions", {"module": "shop"})
        assert all(f["instrumented"] for f in fns["functions"]), fns
        shop = next(m for m in post(url, "control/modules")[1]["modules"] if m["name"] == "shop")
        assert shop["instrumented"] is True and "while the program ran" in shop["reason"], shop

        # Uninstrument one function: its calls are no longer recorded.
        s, rep = post(url, "control/uninstrument", {"target": "shop.price"})
        assert s == 200 and rep["swapped"] == ["shop.price"], rep
        before = entries()
        handle(7)
        assert entries() - before == with_price - 2  # price's call and return are no longer recorded
        # Bad input is a 400 with a message.
        for route, body, needle in [
            ("control/instrument", {}, "target"),
            ("control/instrument", {"target": "nosuchmod"}, "no loaded module"),
            ("control/functions", {"module": "nosuchmod"}, "no loaded module"),
            ("control/explode", None, "unknown control action"),
        ]:
            s, err = post(url, route, body)
            assert s == 400 and needle in err["error"], (route, s, err)
        assert proc.poll() is None, "the program is unharmed"
    finally:
        proc.kill()
        proc.wait()


def test_live_search_by_predicate(tmp_path):
    """`POST /api/control/predicate`: a Python expression over `v` evaluated on the recorded values
    of the running program, bounded, resumable; a bad expression is a 400 with the message."""
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        import squall
        squall.api.start_recording(install_hook=False)
        from squall._instrument import rewrite
        ns = {"__name__": "app"}
        exec(rewrite.compile_instrumented("def invoice(n):\\n    d = {'total': n * 100}\\n    return d\\n", "app.py", "app"), ns)
        for n in range(1, 7):
            ns["invoice"](n)
        print(squall.api.local_connect(), flush=True)
        sys.stdin.read()
    """)
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), proc.stderr.read() if proc.poll() is not None else url
        expr = 'isinstance(v, dict) and v.get("total", 0) > 300'
        s, r = post(url, "control/predicate", {"expr": expr})
        assert s == 200, r
        assert r["done"] is True and r["next"] is None, r
        # n = 4, 5, 6: the dict bound to d and the same dict returned.
        assert len(r["matches"]) == 6, r
        assert {m["type"] for m in r["matches"]} == {"bind", "fn-return"}
        assert "'total': 400" in r["matches"][0]["preview"]
        assert r["scanned"] >= 12
        # Bounded: stops after max_matches, tells where to resume.
        s, r1 = post(url, "control/predicate", {"expr": expr, "max_matches": 2})
        assert s == 200 and len(r1["matches"]) == 2 and r1["done"] is False and r1["next"], r1
        s, r2 = post(url, "control/predicate", {"expr": expr, "start": r1["next"]})
        assert s == 200 and r2["done"] is True and len(r2["matches"]) == 4, r2
        # Bounded by values evaluated too.
        s, r3 = post(url, "control/predicate", {"expr": "True", "max_values": 3})
        assert s == 200 and r3["scanned"] == 3 and r3["done"] is False, r3
        # Errors in the expression: 400 with the message.
        s, e = post(url, "control/predicate", {"expr": "v.get(("})
        assert s == 400 and "SyntaxError" in e["error"], e
        s, e = post(url, "control/predicate", {"expr": "undefined_name > 1"})
        assert s == 400 and "NameError" in e["error"] and "undefined_name" in e["error"], e
        s, e = post(url, "control/predicate", {})
        assert s == 400 and "expr" in e["error"], e
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
