"""The UI server publishes an OpenAPI description of its JSON API (`GET /api/openapi.json`), and
schemathesis (property-based: thousands of generated requests, positive and negative) drives a
real `squall open --no-browser` from it for a bounded time: no 5xx, and every answer conforms to
the description (status codes, content types, response schemas)."""

import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SQUALL = str(BIN / "squall")
PROGRAM = ROOT / "tests" / "agent_programs" / "invoices_serial.py"

pytest.importorskip("schemathesis", reason="schemathesis needs Python 3.11+ (requirements-test.txt)")

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("schema")
    rec = d / "invoices.sqrec"
    r = subprocess.run([SQUALL, "run", "-q", "-o", str(rec), str(PROGRAM)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    p = subprocess.Popen(
        [SQUALL, "open", "--no-browser", str(rec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = p.stdout.readline()
        m = re.match(r"squall UI: (http://127\.0\.0\.1:\d+/)\?token=(\w+)", line)
        assert m, (line, p.stderr.read() if p.poll() is not None else "")
        yield m.group(1), m.group(2)
    finally:
        p.terminate()
        p.wait(timeout=30)


def test_the_description_is_published(server):
    base, token = server
    with urllib.request.urlopen(f"{base}api/openapi.json?token={token}", timeout=30) as r:
        assert r.headers["content-type"] == "application/json"
        assert r.read() == (ROOT / "crates" / "squall_server" / "openapi.json").read_bytes()


@pytest.mark.main_python_only
def test_schemathesis_finds_no_5xx_and_no_answer_outside_the_description(server, tmp_path):
    base, token = server
    cmd = [
        str(BIN / "schemathesis"),
        "run",
        f"{base}api/openapi.json?token={token}",
        "-H",
        f"x-squall-token: {token}",
        "--checks",
        CHECKS,
        "--max-time",
        "50",
        "-n",
        "30",
        "--seed",
        "7",
        "--report-dir",
        str(tmp_path),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    tested = re.search(r"Tested: (\d+)", out)
    assert tested and int(tested.group(1)) >= 20, out[-3000:]
