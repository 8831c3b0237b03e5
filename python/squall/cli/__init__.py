"""The ``squall`` command.

``squall run [options] script.py args...`` / ``squall run [options] -m pkg.mod args...`` runs a
program with recording on from the first line, the way ``python -m cProfile`` runs one: the program
sees the same ``sys.argv``, ``__name__``, ``__file__``, ``__spec__``, ``sys.path[0]`` and a fresh
``__main__`` module; stdout is the program's alone; the exit code is the one Python would give.
At the end a short summary of the recording goes to stderr (``--no-summary`` to leave it out), and
``-i`` drops into a console in the same process so the recording can be queried.

``squall repl [options]``: an instrumented REPL with recording on.

One module per job: ``options.py`` (the parser), ``run.py`` and ``repl.py`` (the subcommands),
``runner.py`` (running a program as python does), ``lifecycle.py`` (the recording around it); the
other subcommands live with what they serve: ``python/squall/query_cli.py``, ``python/squall/ui_cli.py``,
``python/squall/files_cli.py``, ``python/squall/mcp_server.py``, ``python/squall/dap/``.
"""

from __future__ import annotations

import sys

from .options import PROG, _parser, _split_run_argv
from .repl import cmd_repl
from .run import cmd_run

__all__ = ["main", "cmd_run", "cmd_repl", "PROG"]


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = _parser()
    if argv and argv[0] == "run":
        own, prog_argv = _split_run_argv(argv[1:])
        opts = parser.parse_args(["run"] + own)
        return cmd_run(opts, prog_argv)
    opts = parser.parse_args(argv)
    if opts.command == "repl":
        return cmd_repl(opts)
    if opts.command in ("info", "export"):
        from squall import files_cli

        return files_cli.cmd_info(opts) if opts.command == "info" else files_cli.cmd_export(opts)
    if opts.command == "query":
        from squall import query_cli

        return query_cli.cmd_query(opts)
    if opts.command == "open":
        from squall import ui_cli

        return ui_cli.cmd_open(opts)
    if opts.command == "mcp":
        from squall import mcp_server

        return mcp_server.main(opts.recording)
    if opts.command == "dap":
        from squall import dap

        return dap.main()
    parser.print_help(sys.stderr)
    return 2
