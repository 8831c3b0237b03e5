"""squall's own threads leave the process's signals to the program's threads.

A signal sent to a process (Ctrl-C's SIGINT, SIGTERM, SIGALRM) lands on any thread that does not
block it; CPython's handler runs the Python handler only in the main thread, and a main thread
waiting in a C call (``time.sleep``) wakes only when the signal lands on it. A thread of squall's
that took Ctrl-C left ``squall open`` (which sleeps between checks) running: CI's
test_robustness.py::test_ui_server timed out waiting for it to stop. So every thread squall
starts blocks them (``crates/squall_trace/src/quiet_thread.rs``); these tests read the threads'
masks from /proc.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/task")

SQUALL = str(Path(sys.executable).parent / "squall")
ASYNC_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGUSR1]


def _masks(pid: int) -> dict:
    """{thread name: blocked signal mask} of every thread of ``pid``."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread ended
        blk = next(line for line in status.splitlines() if line.startswith("SigBlk:"))
        out.setdefault(name, []).append(int(blk.split()[1], 16))
    return out


def _blocks_all(mask: int) -> bool:
    return all(mask >> (s - 1) & 1 for s in ASYNC_SIGNALS)


def test_a_recorded_programs_squall_threads_block_its_signals(tmp_path):
    """The flusher, the writer and the prefault thread of a recording saved to a file; the
    program's main thread keeps its own mask."""
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent("""
        import os, sys, time
        sys.path.insert(0, sys.argv[1])
        from test_signals import _masks
        data = [[i, str(i)] for i in range(300_000)]  # enough to save while running
        time.sleep(1.2)  # the flusher flushes every 0.5 s: writer and prefault run
        for name, masks in sorted(_masks(os.getpid()).items()):
            print(name, *masks)
        """)
    )
    r = subprocess.run(
        [SQUALL, "run", "--no-summary", "-o", tmp_path / "r.sqrec", prog, Path(__file__).parent],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    masks = {line.split()[0]: [int(m) for m in line.split()[1:]] for line in r.stdout.splitlines()}
    ours = {n: m for n, m in masks.items() if n.startswith("squall-")}
    assert {"squall-flusher", "squall-writer"} <= set(ours), masks
    for name, ms in ours.items():
        assert all(_blocks_all(m) for m in ms), (name, ms)
    main = [m for n, ms in masks.items() if not n.startswith("squall-") for m in ms]
    assert main and not any(m >> (signal.SIGINT - 1) & 1 for m in main), masks


def test_squall_opens_server_threads_block_signals_and_ctrl_c_stops_it(tmp_path):
    rec = tmp_path / "r.sqrec"
    prog = tmp_path / "p.py"
    prog.write_text("def f(x):\n    return x + 1\n\nf(1)\n")
    subprocess.run([SQUALL, "run", "--no-summary", "-o", rec, prog], check=True, timeout=120)
    proc = subprocess.Popen(
        [SQUALL, "open", "--no-browser", rec], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().startswith("squall UI: ")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            masks = _masks(proc.pid)
            if "squall-ui" in masks and "tokio-rt-worker" in masks:
                break
            time.sleep(0.05)
        ours = {n: ms for n, ms in masks.items() if n.startswith(("squall-ui", "tokio"))}
        assert "squall-ui" in ours and "tokio-rt-worker" in ours, masks
        for name, ms in ours.items():
            assert all(_blocks_all(m) for m in ms), (name, ms)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        proc.stdout.close()
        proc.stderr.close()
