"""The command line: the parser of every subcommand, ``run``'s split between squall's options and
the program's argv, and how squall speaks on stderr."""

from __future__ import annotations

import argparse
import sys

PROG = "squall"

# --- options --------------------------------------------------------------------------------


def _add_config_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what is instrumented (also [tool.squall] in pyproject, SQUALL_* env)")
    g.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="PREFIX",
        help="instrument only modules with this prefix (repeatable)",
    )
    g.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="PREFIX",
        help="never instrument modules with this prefix (repeatable)",
    )
    g.add_argument(
        "--skip-regex", default=None, metavar="RE", help="never instrument modules whose name matches this regex"
    )
    g.add_argument(
        "--mode",
        choices=["full", "calls"],
        default=None,
        help="full: calls, returns, exceptions, expressions, bindings; calls: calls only",
    )
    lim = p.add_argument_group("recording limits (each reached limit is reported once on stderr)")
    lim.add_argument(
        "--thread-trace-limit",
        type=_positive_int,
        default=None,
        metavar="N",
        help="entries per thread timeline; the thread stops recording there",
    )
    lim.add_argument(
        "--fn-call-limit",
        type=_positive_int,
        default=None,
        metavar="N",
        help="recorded calls per function per thread; later calls are skipped",
    )
    lim.add_argument(
        "--memory-limit",
        type=_positive_int,
        default=None,
        metavar="MIB",
        help="MiB the recording may hold (entries, values, caches and, saving, the file writer's buffers): "
        "recording stops there, saying so; while saving, entries already in the file leave memory (default 4096)",
    )
    lim.add_argument(
        "--object-depth",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="levels of objects read afresh at every record of an argument, return or binding (default 1; "
        "an expression's value one level less). 0: an object already recorded is "
        "shown as its earlier state with the writes recorded since, marked (earlier); up to ~2.5x faster on "
        "object-heavy programs. 2 and more: deeper levels afresh, slower",
    )
    p.add_argument(
        "-i",
        dest="interactive",
        action="store_true",
        help="after the program ends, open a console in this process to query the "
        "recording (squall, indexes, values are imported)",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="PATH",
        help="save the recording to PATH (default: .squall/<program>-<time>.sqrec)",
    )
    p.add_argument("--no-save", action="store_true", help="keep the recording in this process only (query it with -i)")
    p.add_argument("--no-summary", action="store_true", help="print no summary at the end")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="print nothing of squall's own except errors (implies --no-summary)"
    )


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer 0 or more, got `{text}`")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got `{text}`")
    return value


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("squall")
    except Exception:
        try:
            import squall

            return getattr(squall, "__version__", "unknown")
        except Exception:
            return "unknown"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="squall: an omniscient debugger for Python. Record everything, then look back.",
    )
    p.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run a program with recording on",
        usage=f"{PROG} run [options] (script.py | -m module) [args ...]",
        description="Run a script or module with recording on from the start, as python would.",
    )
    _add_config_options(run)
    run.add_argument(
        "-m",
        dest="module",
        default=None,
        metavar="MODULE",
        help="run a library module as a script (like python -m); the remaining arguments go to it",
    )
    run.add_argument(
        "--ui", action="store_true", help="when the program ends, serve the web UI over its recording until Ctrl-C"
    )
    run.add_argument("--no-browser", action="store_true", help="with --ui: only print the URL, do not open a browser")
    run.add_argument("target", nargs="?", help="the script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the program")

    repl = sub.add_parser(
        "repl", help="an instrumented REPL with recording on", description="An interactive console with recording on."
    )
    _add_config_options(repl)

    info = sub.add_parser(
        "info",
        help="what a recording file holds",
        description="Print what a recording holds: program, argv, Python, start "
        "and end, flows, threads, entry counts, size, completed.",
    )
    info.add_argument("recording", help="a .sqrec file written by `squall run`")
    info.add_argument("--json", action="store_true", help="print JSON (data only) instead of text")

    export = sub.add_parser(
        "export",
        help="convert a recording (Chrome trace, SQLite)",
        description="Write a recording as Chrome trace JSON (Perfetto, chrome://tracing) or as an SQLite database.",
    )
    export.add_argument("recording", help="a .sqrec file written by `squall run`")
    export.add_argument("--format", required=True, choices=["chrome", "sqlite"])
    export.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="PATH",
        help="where to write (default: the recording's path with .json / .sqlite)",
    )

    from squall import query_cli

    query_cli.add_parser(sub)
    from squall import ui_cli

    ui_cli.add_parser(sub)
    mcp = sub.add_parser(
        "mcp",
        help="serve a recording to an AI agent (MCP over stdio)",
        description="Run a Model Context Protocol server over stdio whose tools "
        "answer questions about the recording (needs `pip install squall[mcp]`).",
    )
    mcp.add_argument("recording", help="a .sqrec file written by `squall run`")
    sub.add_parser(
        "dap",
        help="a Debug Adapter Protocol server on stdio (for editors: VS Code, nvim-dap)",
        description="Serve the Debug Adapter Protocol on stdin/stdout: an editor launches a "
        "program (recorded first) or attaches to a recording, then steps through it "
        "forward and backward. See editors/vscode and the README.",
    )
    return p


def _split_run_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """Splits ``run``'s argv into squall's options and the program's argv: everything from the
    script (or from ``-m MODULE``) on belongs to the program, even if it looks like an option."""
    with_value = {
        "--include",
        "--skip",
        "--skip-regex",
        "--mode",
        "--thread-trace-limit",
        "--fn-call-limit",
        "--memory-limit",
        "--object-depth",
        "-o",
        "--output",
    }
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv[:i], argv[i + 1 :]
        if a == "-m":
            return argv[: i + 2], argv[i + 2 :]
        if a.startswith("-m") and len(a) > 2 and not a.startswith("--"):
            return argv[:i] + ["-m", a[2:]], argv[i + 1 :]
        if a in with_value:
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return argv[:i], argv[i:]
    return argv, []


def _warn(msg: str) -> None:
    print(f"{PROG}: warning: {msg}", file=sys.stderr)
