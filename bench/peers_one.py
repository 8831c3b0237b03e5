"""Run one workload of bench/peers.py in this process, alone or under an in-process tracer.

    python bench/peers_one.py [--tool TOOL --trace-out PATH] NAME [SCALE]

NAME is ``fib`` or ``loop`` (bench/workloads.py, what bench/run.py measures: ``fib(25)`` four
times, ``loop_dict(200_000)`` once: small units, 40–250 ms plain, for the slowest tracers) or a
pyperformance benchmark (``bm_NAME.py`` in bench/pyperf/benchmarks). The
module is imported untimed, then one ``run(SCALE)`` is timed and reported on one line, tagged as
bench/pyperf/bench_one.py tags it, so that bench/pyperf/run.py's machinery measures both alike.

``--tool`` runs the work under a tracer that records values, the way its docs tell a user to:
hunter (``CallPrinter`` + ``VarsSnooper``, filtered to the workload's own files), PySnooper and
snoop (the snooping decorator on ``run`` with a depth that reaches every call), birdseye (the
workload module compiled through ``eye`` with ``deep=True``, its SQLite database at PATH).
Tools run from the command line (squall, cProfile, VizTracer, pyttd) need no ``--tool``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PYPERF = os.path.join(HERE, "pyperf")
RESULT_TAG = "PYPERF-RESULT"  # bench/pyperf/bench_one.py's tag: run.py reads this line
DEPTH = 10_000  # snooping depth: deeper than any workload's recursion
TOOLS = ("hunter", "pysnooper", "snoop", "birdseye")


def workload_path(name: str) -> tuple[str, str]:
    """(module name, file) of the workload ``name``."""
    if name in ("fib", "loop"):
        return "workloads", os.path.join(HERE, "workloads.py")
    return f"benchmarks.bm_{name}", os.path.join(PYPERF, "benchmarks", f"bm_{name}.py")


def runner(module, name: str):
    """The timed function: pyperformance's ``run(scale)``, or a unit of bench/run.py's call."""
    if module.__name__.startswith("benchmarks."):
        return module.run
    if name == "fib":
        return lambda scale: [module.fib(25) for _ in range(4 * scale)]
    return lambda scale: [module.loop_dict(200_000) for _ in range(scale)]


def load(name: str, tool: str | None, out: str | None):
    """Import the workload's module; under birdseye, compiled by birdseye (as its import hook
    does for a module that asks to be traced) so that every function in it is traced."""
    sys.path[:0] = [HERE, PYPERF]
    modname, path = workload_path(name)
    if tool != "birdseye":
        return importlib.import_module(modname)
    os.environ["BIRDSEYE_DB"] = f"sqlite:///{out}"
    from birdseye import eye

    if "." in modname:
        importlib.import_module(modname.rsplit(".", 1)[0])
    module = types.ModuleType(modname)
    module.__file__ = path
    sys.modules[modname] = module
    with open(path, encoding="utf-8") as f:
        eye.exec_string(f.read(), path, module.__dict__, module.__dict__, deep=True)
    return module


def traced(fn, tool: str | None, out: str | None):
    """``fn`` under ``tool``, writing what it records to ``out``."""
    if tool == "pysnooper":
        import pysnooper

        return pysnooper.snoop(output=out, depth=DEPTH, color=False)(fn)
    if tool == "snoop":
        import snoop

        return snoop.Config(out=out, color=False, columns=()).snoop(depth=DEPTH)(fn)
    if tool == "hunter":
        import hunter

        def under_hunter(scale, _fn=fn):
            stream = open(out, "w", encoding="utf-8")  # noqa: SIM115 - closed below
            actions = [hunter.CallPrinter(stream=stream), hunter.VarsSnooper(stream=stream)]
            try:
                with hunter.trace(filename_startswith=HERE, actions=actions):
                    return _fn(scale)
            finally:
                stream.close()

        return under_hunter
    return fn


def digest(value) -> str:
    return hashlib.sha1(repr(value).encode()).hexdigest()[:12]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", choices=TOOLS, help="an in-process tracer to run the work under")
    ap.add_argument("--trace-out", help="with --tool: where the tracer writes what it records")
    ap.add_argument("name", help="fib, loop, or a benchmark of bench/pyperf/benchmarks")
    ap.add_argument("scale", type=int, nargs="?", default=1, help="units of work (default 1)")
    args = ap.parse_args()
    if args.tool and not args.trace_out:
        ap.error(f"--tool {args.tool} needs --trace-out PATH (where {args.tool} writes)")

    module = load(args.name, args.tool, args.trace_out)
    work = traced(runner(module, args.name), args.tool, args.trace_out)
    t0 = time.perf_counter()
    result = work(args.scale)
    work_s = time.perf_counter() - t0
    report = {"name": args.name, "work_s": work_s, "result": digest(result)}
    print(RESULT_TAG, json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
