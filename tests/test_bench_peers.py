"""bench/peers.py measures squall and the other tools on the same workload, side by side."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = [sys.executable, str(ROOT / "bench" / "peers.py")]


def test_one_workload_under_plain_squall_and_cprofile(tmp_path):
    out = tmp_path / "peers.json"
    r = subprocess.run(
        [*PEERS, "--only", "fib", "--tools", "full,cprofile", "--timeout", "240", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(out.read_text())
    assert set(data["variants"]) == {"plain", "full", "cprofile"}  # plain: the others' baseline
    cells = data["results"]["fib"]
    for key in ("plain", "full", "cprofile"):
        assert cells[key]["status"] == "ok", cells[key]
        assert cells[key]["work_s"] > 0 and cells[key]["rss_mb"] > 0
    # squall's summary counted what it recorded: fib(25) four times is 4 x 242,785 calls, each
    # with at least a call and a return entry.
    assert cells["full"]["entries"] > 4 * 242_785 * 2
    assert cells["plain"]["entries"] is None
    assert "| fib " in r.stdout and "squall full" in r.stdout


def test_unknown_names_are_quoted_with_the_choices():
    bad_tool = subprocess.run([*PEERS, "--only", "fib", "--tools", "gdb"], capture_output=True, text=True)
    assert bad_tool.returncode != 0
    assert "unknown tool(s) gdb; there are: plain, full, calls, cprofile" in bad_tool.stderr
    bad_load = subprocess.run([*PEERS, "--only", "fibb"], capture_output=True, text=True)
    assert bad_load.returncode == 2
    assert "unknown workload(s) fibb; there are: fib, loop, " in bad_load.stderr
