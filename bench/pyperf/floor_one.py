"""bench_one.py in squall's instrumented code with recording off: the floor of the design.

    squall run --mode full --no-save -q bench/pyperf/floor_one.py NAME [SCALE]

The benchmark is imported and rewritten as ``squall run`` does, so every recorded event still
calls its entry point (``_sq_expr_S(value)`` and the rest), but recording is stopped first:
each entry point returns at its first check. What is left is the price of the calls the
rewrite adds, which no work inside the engine can take back (run.py ``--floor``;
docs/benchmarks.md, "Eleventh session").
"""

import os
import runpy

from squall import api

api.stop_recording()
runpy.run_path(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_one.py"), run_name="__main__"
)
