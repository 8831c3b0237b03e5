"""Run one pyperformance benchmark with less work, for instruction counts under callgrind.

    python bench/pyperf/small.py NAME N
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=/tmp/cg.out \\
        .venv/bin/python -m squall run --mode calls -o /tmp/x.sqrec bench/pyperf/small.py richards 2

Sets the benchmark's ``LOOPS`` to N (go: ``GAMES`` to N and ``LOOPS`` to 1) and runs it once.
Under ``--separate-threads=yes`` the file ending ``-01`` is the program's own thread: its total
is repeatable to ~0.1% where wall time on these shared 2-core machines moves by 10% and more,
so two engines compare by it (docs/benchmarks.md, "Sixth session, lead"). Compare work of the
same N only; the instrumentation cache (``SQUALL_CACHE``) must be warm in both runs.
"""

import importlib
import sys

name, n = sys.argv[1], int(sys.argv[2])
module = importlib.import_module(f"benchmarks.bm_{name}")
if name == "go":
    module.GAMES = n
    module.LOOPS = 1
elif hasattr(module, "LOOPS"):
    module.LOOPS = n
module.run(1)
