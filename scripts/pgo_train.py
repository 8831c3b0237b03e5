"""The training run of a profile-guided build of the engine (scripts/install_engine.sh).

    python scripts/pgo_train.py

Run with the Python of a venv whose squall was built with ``-Cprofile-generate``: every process
that loads that engine adds its counts to the profile when it exits. What runs here decides
what the optimiser treats as hot, so it is what users run: the pyperformance programs of
bench/pyperf recorded in both modes and saved to a file (instances, containers, writes, the
file writer), the fib/loop/write workloads of bench/, the bundled example, and the queries a
user, the UI and an agent make of those files (so that the readers are not laid out as
never-run code). About a minute. Exits non-zero when a run fails: a build trained on a
failing run would be optimised for the wrong paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYPERF = os.path.join(ROOT, "bench", "pyperf")
BENCHMARKS = (
    "deltablue",
    "go",
    "richards",
    "hexiom",
    "raytrace",
    "chaos",
    "float",
    "nbody",
    "pyflate",
    "comprehensions",
    "generators",
    "coroutines",
    "async_generators",
    "unpack_sequence",
    "scimark",
    "spectral_norm",
)
WORKLOADS = """
import sys
sys.path.insert(0, {bench!r})
import workloads
workloads.fib(20)
workloads.loop_dict(20_000)
workloads.write_loop(20_000)
"""
QUERIES = (
    ("summary",),
    ("frequencies",),
    ("calls", "{function}"),
    ("frames", "{function}"),
    ("search", "1"),
    ("writes", "value"),
    ("window", "100"),
    ("stack", "100"),
    ("bindings", "100"),
    ("exceptions",),
)


def run(args: list[str], cwd: str = ROOT) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"pgo_train: {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def record(out: str, program: list[str], mode: str, cwd: str = ROOT) -> str:
    run([sys.executable, "-m", "squall", "run", "--mode", mode, "--no-summary", "-o", out, *program], cwd=cwd)
    return out


def query(recording: str, function: str) -> None:
    for q in QUERIES:
        run([sys.executable, "-m", "squall", "query", recording, *(a.format(function=function) for a in q)])


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="squall-pgo-") as tmp:
        for name in BENCHMARKS:
            for mode in ("full", "calls"):
                record(os.path.join(tmp, f"{name}-{mode}.sqrec"), ["small.py", name, "1"], mode, cwd=PYPERF)
            print(f"pgo_train: {name}", file=sys.stderr, flush=True)
        query(os.path.join(tmp, "deltablue-full.sqrec"), "Variable.add_constraint")
        query(os.path.join(tmp, "richards-calls.sqrec"), "TaskState.isTaskHoldingOrWaiting")
        workloads = os.path.join(tmp, "workloads.py")
        with open(workloads, "w", encoding="utf-8") as f:
            f.write(WORKLOADS.format(bench=os.path.join(ROOT, "bench")))
        for mode in ("full", "calls"):
            query(record(os.path.join(tmp, f"workloads-{mode}.sqrec"), [workloads], mode), "fib")
        example = os.path.join(ROOT, "examples", "invoices", "main.py")
        query(record(os.path.join(tmp, "invoices.sqrec"), [example], "full"), "worker")


if __name__ == "__main__":
    main()
