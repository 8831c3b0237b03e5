"""End-to-end: record the bundled example, open it with `squall open`, drive the web UI in headless
Chromium (tests/e2e/ui_e2e.js, playwright-core) and take screenshots (docs/screenshots/ with
SQUALL_UPDATE_SCREENSHOTS=1).

Needs Debian's `chromium` and `npm install` in tests/e2e; skipped without them, except under CI
(CI=true), where their absence is a failure."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
E2E = Path(__file__).resolve().parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SQUALL = [sys.executable, "-c", "import sys; from squall.cli import main; sys.exit(main())"]


def _need_browser():
    missing = []
    if not os.path.exists(CHROMIUM):
        missing.append(f"{CHROMIUM} (apt-get install -y chromium)")
    if not (E2E / "node_modules" / "playwright-core").is_dir():
        missing.append("tests/e2e/node_modules/playwright-core (npm install in tests/e2e)")
    if not shutil.which("node"):
        missing.append("node")
    if missing:
        msg = "UI end-to-end test needs " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    out = tmp_path_factory.mktemp("e2e") / "invoices.sqrec"
    r = subprocess.run(
        SQUALL + ["run", "-q", "-o", str(out), "examples/invoices/main.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert out.exists()
    return out


@pytest.fixture()
def server(recording):
    p = subprocess.Popen(
        SQUALL + ["open", "--no-browser", "--port", "0", str(recording)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = p.stdout.readline()
        assert line.startswith("squall UI: http://127.0.0.1:"), (line, p.stderr.read() if p.poll() is not None else "")
        yield line.split("squall UI: ", 1)[1].strip()
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def _get(url, token=None):
    req = urllib.request.Request(url, headers={"x-squall-token": token} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_open_serves_api_with_token(server):
    base, token = server.split("/?token=")
    status, body = _get(base + "/api/flows")
    assert status == 401 and "token" in body["error"]
    status, body = _get(base + "/api/flows", token)
    assert status == 200
    names = [t["name"] for f in body["flows"] for t in f["threads"]]
    assert names == ["MainThread", "invoice-worker"]
    status, body = _get(base + "/api/frame?tl=0&idx=zz", token)
    assert status == 400 and "idx" in body["error"]
    status, body = _get(base + "/api/exceptions", token)
    assert status == 200
    assert {x["type"].split(".")[-1] for x in body["items"]} == {"KeyError", "InvoiceError"}


def test_changes_list_an_objects_states_and_the_writes_to_it(server):
    """/api/changes (the inspector's history): the first invoice's recorded states, then the write
    of its total in process_invoice (line 36), from unknown to the total its result reports."""
    base, token = server.split("/?token=")
    status, fns = _get(base + "/api/fn_stats?tl=0", token)
    form = next(f["id"] for f in fns if f["display"] == "billing.processing.process_invoice")
    _, calls = _get(base + f"/api/fn_calls?tl=0&form={form}&limit=1", token)
    call = calls["items"][0]
    invoice = call["args"][0]["value"]
    assert invoice["preview"].startswith("Invoice#") and "INV-001" in invoice["preview"]
    status, body = _get(base + f"/api/changes?obj={invoice['id']}&flow=0", token)
    assert status == 200, body
    kinds = [c["kind"] for c in body["changes"]]
    assert kinds[-1] == "write" and set(kinds[:-1]) == {"state"}, kinds
    write = body["changes"][-1]
    assert (write["name"], write["attr"], write["where"]["fn"], write["where"]["line"]) == (
        "total",
        True,
        "billing.processing.process_invoice",
        36,
    )
    result = call["ret"]["value"]["preview"]  # {'number': ..., 'net': N, 'tax': T, 'total': ... (cut)
    net, tax = (float(re.search(rf"'{k}': ([0-9.]+)", result).group(1)) for k in ("net", "tax"))
    assert float(write["new"]["preview"]) == round(net + tax, 2), (write, result)
    assert call["idx"] < write["idx"] < call["ret"]["idx"]
    status, body = _get(base + "/api/changes?obj=1&flow=9", token)
    assert status == 404 and body["error"] == "no flow 9 in this recording (see /api/flows)"


def test_open_missing_file():
    r = subprocess.run(
        SQUALL + ["open", "--no-browser", "/nonexistent/x.sqrec"], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2
    assert "no such file" in r.stderr


@pytest.mark.main_python_only
def test_ui_in_headless_chromium(server, tmp_path):
    _need_browser()
    # SQUALL_UPDATE_SCREENSHOTS=1 refreshes the committed ones in docs/screenshots.
    shots = ROOT / "docs" / "screenshots" if os.environ.get("SQUALL_UPDATE_SCREENSHOTS") else tmp_path / "shots"
    r = subprocess.run(
        ["node", str(E2E / "ui_e2e.js"), server, str(shots)], cwd=E2E, capture_output=True, text=True, timeout=240
    )
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "E2E PASSED" in r.stdout
    for name in [
        "stepper-start",
        "stepper-stepped",
        "exception-raised",
        "value-inspector",
        "call-tree",
        "threads",
        "code-click",
        "printers",
        "call-tree-pane",
        "value-history",
        "stepper-1024",
        "stepper-2560",
        "stepper-light-1024",
    ]:
        assert (shots / f"{name}.png").stat().st_size > 1000


LIVE_APP = """import squall

def handle(n):
    m = n * 2
    squall.bookmark("handling")
    return m
"""

LIVE_PROGRAM = """import sys
import squall
import shop                      # loaded before recording: not instrumented
squall.api.start_recording(install_hook=False)
from squall._instrument import rewrite
path = sys.argv[1]
ns = {"__name__": "app"}
exec(rewrite.compile_instrumented(open(path).read(), path, "app"), ns)
ns["handle"](1)
print(squall.api.local_connect(), flush=True)
for line in sys.stdin:
    ns["handle"](int(line))
"""


def test_live_ui_in_headless_chromium(tmp_path):
    """The UI over a running program: live controls, layout with them, a code bookmark, the
    modules browser instrumenting a module (tests/e2e/ui_live_e2e.js)."""
    _need_browser()
    (tmp_path / "shop.py").write_text(
        "def price(n):\n    return n * 3\n\nclass Cart:\n    def total(self, n):\n        return price(n) + 1\n"
    )
    (tmp_path / "app.py").write_text(LIVE_APP)
    (tmp_path / "server.py").write_text(LIVE_PROGRAM)
    shots = ROOT / "docs" / "screenshots" if os.environ.get("SQUALL_UPDATE_SCREENSHOTS") else tmp_path / "shots"
    proc = subprocess.Popen(
        [sys.executable, "server.py", str(tmp_path / "app.py")],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), proc.stderr.read() if proc.poll() is not None else url
        r = subprocess.run(
            ["node", str(E2E / "ui_live_e2e.js"), url, str(shots)], cwd=E2E, capture_output=True, text=True, timeout=240
        )
        print(r.stdout)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "E2E LIVE PASSED" in r.stdout
        assert proc.poll() is None, "the program is unharmed"
    finally:
        proc.kill()
        proc.wait()
