"""The seed's whole FlowStorm workflow, in squall's vocabulary (tests/seed/walkthrough.py)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_seed_walkthrough_runs_step_by_step():
    script = os.path.join(ROOT, "tests", "seed", "walkthrough.py")
    examples = os.path.join(ROOT, "examples", "invoices")
    proc = subprocess.run([sys.executable, script, examples], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("walkthrough ok:"), proc.stdout
    assert proc.stderr == ""
