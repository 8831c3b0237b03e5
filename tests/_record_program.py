"""Runs a program under ``squall run --no-summary`` in this process, then writes the rendering of
every thread's call tree (``squall._render.render_flow``) to a file. Used by test_programs.py:

    python _record_program.py PROGRAM.py OUT.txt
"""

import sys

from squall import _render, cli

program, out = sys.argv[1], sys.argv[2]
sys.argv[:] = [sys.argv[0]]
code = cli.main(["run", "--no-summary", program])
text = _render.render_flow(0, print_level=3, print_length=8)
with open(out, "w", encoding="utf-8") as f:
    f.write(text)
sys.stdout.flush()
sys.exit(code)
