"""The live UI's token runs code in the program, so: predicates are bounded in time and
cancellable (an endless one no longer freezes the program), the token stays out of logs (a 0600
file instead of stderr when stderr is not a terminal), users can bring their own token, and a
bind other machines can reach is warned about and prints a URL they can use. docs/security.md."""

import json
import os
import re
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

SQUALL = str(Path(sys.executable).parent / "squall")

LIVE = textwrap.dedent("""
    import sys
    import squall
    squall.api.start_recording(install_hook=False)
    from squall._instrument import rewrite
    ns = {"__name__": "app"}
    exec(rewrite.compile_instrumented("def invoice(n):\\n    d = {'total': n * 100}\\n    return d\\n", "app.py", "app"), ns)
    for n in range(1, 7):
        ns["invoice"](n)
    print(squall.api.local_connect(**json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}), flush=True)
    for line in sys.stdin:
        print(ns["invoice"](int(line))["total"], flush=True)
""").replace("import sys\n", "import json, sys\n", 1)


def start_live(tmp_path, *args, env=None):
    script = tmp_path / "server.py"
    script.write_text(LIVE)
    e = dict(os.environ, SQUALL_UI_URL_DIR=str(tmp_path / "urls"))
    e.pop("SQUALL_UI_TOKEN", None)
    e.update(env or {})
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=e,
    )
    url = proc.stdout.readline().strip()
    assert url.startswith("http://"), proc.stderr.read() if proc.poll() is not None else url
    return proc, url


def stop(proc):
    proc.kill()
    proc.wait()


def post(url, route, body, timeout=30):
    base, token = url.split("?token=")
    req = urllib.request.Request(
        f"{base.rstrip('/')}/api/{route}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "x-squall-token": token},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def program_answers(proc, n=3):
    proc.stdin.write(f"{n}\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip() == str(n * 100)


def test_an_endless_predicate_stops_at_its_timeout_and_the_program_goes_on(tmp_path):
    proc, url = start_live(tmp_path)
    try:
        t = time.monotonic()
        s, r = post(url, "control/predicate", {"expr": "[x for x in iter(int, 1)]", "timeout": 1})
        took = time.monotonic() - t
        assert s == 200, r
        assert r["stopped"] == "timeout" and r["done"] is False, r
        assert r["slow_at"]["idx"] is not None and r["next"], r
        assert took < 10, took
        # a program-defined __bool__/__eq__ that loops is the same: the predicate's Python code is watched
        s, r = post(url, "control/predicate", {"expr": "(lambda: [0 for _ in iter(int, 1)])()", "timeout": 0.5})
        assert s == 200 and r["stopped"] == "timeout", r
        assert program_answers(proc), "the program is unharmed"
        # Out of range timeouts are refused.
        for bad in (0, -1, 1000, "soon"):
            s, e = post(url, "control/predicate", {"expr": "True", "timeout": bad})
            assert s == 400 and "timeout" in e["error"], (bad, e)
        # A normal predicate is unchanged.
        s, r = post(url, "control/predicate", {"expr": 'isinstance(v, dict) and v["total"] > 300'})
        assert s == 200 and r["done"] and r["stopped"] is None and len(r["matches"]) == 6, r
    finally:
        stop(proc)


def test_a_running_predicate_can_be_cancelled(tmp_path):
    proc, url = start_live(tmp_path)
    try:
        got = {}

        def run():
            got["answer"] = post(
                url, "control/predicate", {"expr": "[x for x in iter(int, 1)]", "timeout": 30}, timeout=60
            )

        th = threading.Thread(target=run)
        t = time.monotonic()
        th.start()
        time.sleep(1.0)
        s, r = post(url, "control/predicate_cancel", {})
        assert s == 200 and r == {"cancelling": True}
        th.join(timeout=20)
        assert not th.is_alive()
        s, r = got["answer"]
        assert s == 200 and r["stopped"] == "cancelled", r
        assert time.monotonic() - t < 15
        assert program_answers(proc)
    finally:
        stop(proc)


def test_the_live_token_is_not_written_to_a_log(tmp_path):
    proc, url = start_live(tmp_path)
    try:
        token = url.split("?token=")[1]
        assert post(url, "control/status", {})[0] == 200
        proc.stdin.close()  # the program ends normally
        assert proc.wait(timeout=30) == 0
    finally:
        stop(proc)
    err = proc.stderr.read()
    assert token not in err, err
    m = re.search(
        r"squall UI \(live\): (http://127\.0\.0\.1:\d+/) \(the URL with its access token is in (\S+), "
        r"readable only by you; the token lets its holder run code in this program\)",
        err,
    )
    assert m, err
    path = Path(m.group(2))
    assert path.parent == tmp_path / "urls"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not path.exists(), "the URL file outlived the program"


def test_the_live_url_file_is_readable_only_by_its_owner(tmp_path):
    proc, url = start_live(tmp_path)
    try:
        files = list((tmp_path / "urls").iterdir())
        assert len(files) == 1
        assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
        assert files[0].read_text().strip() == url
    finally:
        stop(proc)


def test_a_users_own_token(tmp_path):
    token = "my-own-token-0123456789abcdef"
    proc, url = start_live(tmp_path, env={"SQUALL_UI_TOKEN": token})
    try:
        assert url.endswith("?token=" + token)
        assert post(url, "control/status", {})[0] == 200
    finally:
        stop(proc)
    err = proc.stderr.read()
    assert token not in err and "?token=<your token>" in err, err
    # A token that is too short is refused, saying why, without echoing it.
    r = subprocess.run(
        [SQUALL, "open", "--no-browser", "--token", "hunter2", "nothing.sqrec"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2  # no such file is said first
    rec = tmp_path / "p.sqrec"
    (tmp_path / "p.py").write_text("print(1)\n")
    subprocess.run(
        [SQUALL, "run", "-q", "-o", str(rec), str(tmp_path / "p.py")], check=True, timeout=120, capture_output=True
    )
    r = subprocess.run(
        [SQUALL, "open", "--no-browser", "--token", "hunter2", str(rec)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 1 and "at least 16 characters" in r.stderr and "hunter2" not in r.stderr, r.stderr


def test_a_bind_other_machines_reach_is_warned_about_and_prints_a_usable_url(tmp_path):
    rec = tmp_path / "p.sqrec"
    (tmp_path / "p.py").write_text("def f():\n    return 1\nf()\n")
    subprocess.run(
        [SQUALL, "run", "-q", "-o", str(rec), str(tmp_path / "p.py")], check=True, timeout=120, capture_output=True
    )
    p = subprocess.Popen(
        [SQUALL, "open", "--no-browser", "--host", "0.0.0.0", str(rec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = p.stdout.readline()
        m = re.match(r"squall UI: http://([^:/]+):(\d+)/\?token=(\w+)", line)
        assert m, line
        host, port, token = m.groups()
        assert host not in ("127.0.0.1", "0.0.0.0") and host == socket.gethostname(), line
        warning = p.stderr.readline()
        assert "warning: the UI listens on 0.0.0.0" in warning and "reachable from other machines" in warning
        # The printed name is served; a foreign Host is not.
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/flows?token={token}", headers={"host": host})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/flows?token={token}", headers={"host": "rebind.attacker.example"}
        )
        try:
            urllib.request.urlopen(req, timeout=30)
            raise AssertionError("a foreign Host must be refused")
        except urllib.error.HTTPError as e:
            assert e.code == 403
    finally:
        p.terminate()
        p.wait(timeout=30)
