"""``squall run``: a program run as ``python`` would run it, recorded from its first line."""

from __future__ import annotations

import os
import sys

from .lifecycle import _finish_saving, _print_summary, _serve_ui_until_interrupted, _setup_recording, _stop_recording
from .options import PROG
from .repl import _console_namespace, _interact
from .runner import _exit_like_sigint, _Outcome, _own_headroom, _run_module, _run_script, _wait_for_threads


def cmd_run(opts, prog_argv: list[str]) -> int:
    if opts.module is None:
        if not prog_argv:
            print(
                f"usage: {PROG} run [options] (script.py | -m module) [args ...]\n"
                f"{PROG} run: error: a script or -m MODULE is required",
                file=sys.stderr,
            )
            return 2
        target, prog_args = prog_argv[0], prog_argv[1:]
    else:
        target, prog_args = None, prog_argv

    if target is not None and not os.path.exists(target):
        # Fail before touching anything, exactly as python does.
        print(
            f"{PROG}: can't open file {os.path.abspath(target)!r}: [Errno 2] No such file or directory", file=sys.stderr
        )
        return 2

    program_argv = [target] + prog_args if target is not None else ["-m", opts.module] + prog_args
    hook = _setup_recording(opts, target, program_argv)
    outcome = _Outcome()
    outcome.watch_threads()
    if target is not None:
        _run_script(target, prog_args, hook, outcome)
    else:
        _run_module(opts.module, prog_args, hook, outcome)

    if opts.interactive:
        ns = _console_namespace()
        main = sys.modules.get("__main__")
        if main is not None and getattr(main, "__name__", None) == "__main__":
            # Like python -i: the program's globals, plus the query modules.
            merged = dict(main.__dict__)
            merged.update({k: v for k, v in ns.items() if k not in merged or k == "__name__"})
            merged["__name__"] = "__main__"
            ns = merged
        saved = _finish_saving(outcome)
        _print_summary(opts, outcome, saved)
        _interact(
            ns,
            banner=(
                f"{PROG}: the recording is in this process. Try indexes.all_flows(), "
                "indexes.fn_call_stats(0), indexes.exceptions()."
            ),
        )
        return outcome.exit_code

    _wait_for_threads()
    _stop_recording()
    with _own_headroom():
        saved = _finish_saving(outcome)
        _print_summary(opts, outcome, saved)
    if getattr(opts, "ui", False):
        _serve_ui_until_interrupted(opts, saved)
    if outcome.keyboard_interrupt:
        _exit_like_sigint()
    return outcome.exit_code
