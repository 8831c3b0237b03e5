"""Source files a recording names are shown only as they were recorded: `squall run` stores the
size and SHA-256 of exactly the bytes it compiled (the script, imported modules, modules
instrumented at runtime); `squall query ... source`, the MCP `source` tool (same code: squall.agent)
and the live engine refuse a file that changed since, a FIFO in its place, and say why."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import squall
from squall import agent

SQUALL = str(Path(sys.executable).parent / "squall")

MAIN = """\
import helper

def main():
    return helper.double(21)

print(main())
"""
HELPER = """\
# -*- coding: latin-1 -*-
NAME = "caf\xe9"

def double(x):
    return x * 2
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "helper.py").write_bytes(HELPER.encode("latin-1"))
    rec = tmp_path / "run.sqrec"
    r = subprocess.run(
        [SQUALL, "run", "-q", "-o", str(rec), str(tmp_path / "main.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    return tmp_path, rec


def idx_of_call(rec, fn):
    return agent.calls(rec, fn)["calls"][0]["idx"]


def test_recorded_sources_are_verified(project):
    d, path = project
    rec = squall.load(path)
    for fn, file in [("double", "helper.py"), ("main", "main.py")]:
        out = agent.source(rec, idx_of_call(rec, fn))
        assert out["file"] == str(d / file)
        assert "note" not in out, out
        assert any(ln.startswith(">") for ln in out["lines"])
    # the bytes hashed are the file's (latin-1 here), not a re-encoding of the decoded text
    text, verified, note = rec._file.read_source(str(d / "helper.py"))
    assert verified and note is None and "caf\ufffd" in text


def test_a_changed_source_is_refused_with_both_hashes(project):
    d, path = project
    with open(d / "helper.py", "a") as f:
        f.write("# edited\n")
    idx = idx_of_call(squall.load(path), "double")
    r = subprocess.run([SQUALL, "query", str(path), "source", str(idx)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    helper = str(d / "helper.py")
    assert f"source changed since recording: {helper} (recorded sha256 " in r.stdout, r.stdout
    assert "; now sha256 " in r.stdout
    assert "def double" not in r.stdout  # the edited file is not shown as if it were the recorded one
    # the MCP tool answers through squall.agent
    out = agent.source(squall.load(path), idx)
    assert out["lines"] == [] and out["note"].startswith("source changed since recording: ")


def test_a_fifo_in_place_of_a_source_does_not_hang(project):
    d, path = project
    helper = d / "helper.py"
    helper.unlink()
    os.mkfifo(helper)
    idx = idx_of_call(squall.load(path), "double")
    r = subprocess.run([SQUALL, "query", str(path), "source", str(idx)], capture_output=True, text=True, timeout=60)
    assert f"refusing to read {helper}: it is a FIFO, not a regular file" in r.stdout, r.stdout + r.stderr


def test_a_moved_recording_names_files_that_are_gone(project):
    d, path = project
    shutil.move(str(d / "helper.py"), str(d / "elsewhere.py"))
    rec = squall.load(path)
    out = agent.source(rec, idx_of_call(rec, "double"))
    assert out["lines"] == [] and "cannot read" in out["note"] and "helper.py" in out["note"]


def test_the_live_recorder_knows_its_sources(tmp_path):
    """In the running program: the hook noted the script's and the module's bytes; a module
    instrumented at runtime (squall.api.instrument) is noted too."""
    (tmp_path / "helper.py").write_bytes(HELPER.encode("latin-1"))
    (tmp_path / "late.py").write_text("def f():\n    return 1\n")
    (tmp_path / "main.py").write_text(
        textwrap.dedent("""\
        import sys
        import helper
        from squall import _engine, api
        sys.path.insert(0, ".")
        import late
        for f in (__file__, helper.__file__):
            text, verified, note = _engine.read_source(f)
            print(verified, note)
        try:
            _engine.read_source(late.__file__)
        except ValueError as e:
            print("late:", e)
        api.instrument("late")
        print(_engine.read_source(late.__file__)[1])
        try:
            _engine.read_source("/etc/passwd")
        except ValueError as e:
            print(e)
    """)
    )
    r = subprocess.run(
        [SQUALL, "run", "-q", "--skip", "late", "main.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["True None", "True None"], r.stdout
    assert lines[2].startswith("late: ") and "not a source file of this recording" in lines[2]
    assert lines[3:] == ["True", "`/etc/passwd` is not a source file of this recording"]
