"""The UI over a live recording (`squall.api.local_connect()`) and after a run (`squall run --ui`):
URL with a token, 401 without it, the recording readable through the API, the program unharmed."""

import json
import os
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
    script.write_text(textwrap.dedent("""
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
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
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
    proc = subprocess.Popen([SQUALL, "run", "--ui", "--no-browser", "-o", "p.sqrec", str(script)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
