"""editors/vscode packages into a .vsix with its own `npm run package` (@vscode/vsce), and the
package contributes the `squall` debug type with launch and attach configurations that the
adapter understands.

Needs node and `npm ci` in editors/vscode; skipped without them, except under CI (CI=true)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[2] / "editors" / "vscode"


@pytest.mark.main_python_only
def test_extension_packages_with_the_squall_debug_type(tmp_path):
    missing = [
        m
        for m, ok in (
            ("node and npm", shutil.which("npm")),
            (
                "editors/vscode/node_modules/@vscode/vsce (npm ci in editors/vscode)",
                (EXT / "node_modules" / "@vscode" / "vsce").is_dir(),
            ),
        )
        if not ok
    ]
    if missing:
        if os.environ.get("CI"):
            pytest.fail("packaging the VS Code extension needs " + ", ".join(missing))
        pytest.skip("packaging the VS Code extension needs " + ", ".join(missing))
    r = subprocess.run(["node", "--check", "extension.js"], cwd=EXT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    vsix = EXT / "squall-debug.vsix"
    vsix.unlink(missing_ok=True)
    r = subprocess.run(["npm", "run", "package"], cwd=EXT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        with zipfile.ZipFile(vsix) as z:
            names = set(z.namelist())
            manifest = json.loads(z.read("extension/package.json"))
    finally:
        vsix.unlink(missing_ok=True)
    assert {"extension/extension.js", "extension/package.json", "extension/readme.md"} <= names
    assert not any("node_modules" in n for n in names)
    (debugger,) = manifest["contributes"]["debuggers"]
    assert debugger["type"] == "squall"
    attrs = debugger["configurationAttributes"]
    assert {"program", "module", "args", "cwd", "stopOnEntry"} <= set(attrs["launch"]["properties"])
    assert attrs["attach"]["required"] == ["recording"]
    assert {c["request"] for c in (s["body"] for s in debugger["configurationSnippets"])} == {"launch", "attach"}
