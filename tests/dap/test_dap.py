"""`squall dap` driven by the Debug Adapter Protocol's reference client: tests/dap/dap.test.js
(node's test runner, @vscode/debugadapter-testsupport's DebugClient) over recordings of
tests/dap/programs and tests/programs made here.

Needs node and `npm ci` in tests/dap; skipped without them, except under CI (CI=true), where
their absence is a failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SQUALL = [sys.executable, "-m", "squall"]
PROGRAMS = {
    "stepping": HERE / "programs" / "stepping.py",
    "mutated": HERE / "programs" / "mutated.py",
    "threads": ROOT / "tests" / "programs" / "threads.py",
    "generators": ROOT / "tests" / "programs" / "generators.py",
    "exc_caught_in_caller": ROOT / "tests" / "programs" / "exc_caught_in_caller.py",
}


def _need_node() -> None:
    missing = []
    if not shutil.which("node"):
        missing.append("node")
    if not (HERE / "node_modules" / "@vscode" / "debugadapter-testsupport").is_dir():
        missing.append("tests/dap/node_modules/@vscode/debugadapter-testsupport (npm ci in tests/dap)")
    if missing:
        msg = "the DAP tests need " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


def _squall_bin() -> str:
    """The `squall` command of this Python (the adapter an editor starts as `squall dap`)."""
    found = Path(sys.executable).parent / "squall"
    if not found.exists():
        pytest.fail(f"no squall command beside {sys.executable}: install squall into this environment")
    return str(found)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("dap")
    paths = {}
    for name, program in PROGRAMS.items():
        path = out / f"{name}.sqrec"
        r = subprocess.run(
            SQUALL + ["run", "-q", "-o", str(path), str(program)], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert path.exists(), r.stderr
        paths[name] = str(path)
    return paths


def test_dap_with_debug_client(recordings):
    _need_node()
    env = dict(os.environ, SQUALL_BIN=_squall_bin(), SQUALL_RECORDINGS=json.dumps(recordings))
    r = subprocess.run(
        ["node", "--test", "--test-reporter=spec", "dap.test.js"],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-20000:] + r.stderr[-5000:]
    assert "# fail 0" in r.stdout or "fail 0" in r.stdout, r.stdout
