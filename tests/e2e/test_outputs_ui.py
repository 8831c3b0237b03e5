"""End-to-end: the Outputs tab (ui/outputs.js) over a recording of tests/output_programs/threads_out.py,
driven in headless Chromium by tests/e2e/outputs_e2e.js. Needs what tests/e2e/test_ui.py needs."""

from __future__ import annotations

import os
import subprocess

import pytest
from test_ui import E2E, ROOT, SQUALL, _need_browser


@pytest.fixture()
def server(tmp_path):
    out = tmp_path / "threads_out.sqrec"
    r = subprocess.run(
        SQUALL + ["run", "-q", "-o", str(out), "tests/output_programs/threads_out.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    p = subprocess.Popen(
        SQUALL + ["open", "--no-browser", "--port", "0", str(out)],
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


@pytest.mark.main_python_only
def test_outputs_tab_in_headless_chromium(server, tmp_path):
    _need_browser()
    shots = ROOT / "docs" / "screenshots" if os.environ.get("SQUALL_UPDATE_SCREENSHOTS") else tmp_path / "shots"
    r = subprocess.run(
        ["node", str(E2E / "outputs_e2e.js"), server, str(shots)], cwd=E2E, capture_output=True, text=True, timeout=240
    )
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "E2E PASSED" in r.stdout
    assert (shots / "outputs.png").stat().st_size > 1000
