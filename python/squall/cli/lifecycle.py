"""The recording around a program run from the command line: configure, install the hook, start,
save, stop, summarize, and serve the UI afterwards (``--ui``)."""

from __future__ import annotations

import os
import sys

from .options import PROG, _warn
from .runner import _Outcome


def _setup_recording(opts, script_path: str | None = None, program_argv: list[str] | None = None) -> object | None:
    """Loads the configuration (flags over SQUALL_* env over [tool.squall] in pyproject),
    installs the import hook and turns recording on. Returns the hook module (or None when the
    instrumenter is not available)."""
    overrides = {
        "include": list(opts.include) or None,
        "skip": list(opts.skip) or None,
        "skip_regex": opts.skip_regex,
        "mode": opts.mode,
    }
    overrides = {k: v for k, v in overrides.items() if v is not None}
    config = None
    try:
        from squall import config as _config
    except ImportError as e:
        _warn(f"configuration unavailable ({e}); using defaults")
    else:
        try:
            if hasattr(_config, "configure"):
                config = _config.configure(script_path=script_path, **overrides)
            else:  # pragma: no cover - older config API
                config = _config.load_config(overrides)
        except ValueError as e:  # config.ConfigError: a bad flag, env var or pyproject entry
            msg = str(e)
            print(msg if msg.startswith(PROG) else f"{PROG}: {msg}", file=sys.stderr)
            raise SystemExit(2)
        except Exception as e:  # e.g. no TOML reader: run with the defaults rather than not at all
            _warn(f"could not load the configuration ({type(e).__name__}: {e}); using defaults")
            config = None
    hook = None
    try:
        from squall._instrument import hook as _hook

        _hook.install(config)
        hook = _hook
    except ImportError as e:
        _warn(f"instrumenter unavailable ({e}); the program runs uninstrumented")
    try:
        from squall import api

        limits = {
            "thread_trace_limit": getattr(opts, "thread_trace_limit", None),
            "fn_call_limit": getattr(opts, "fn_call_limit", None),
            "memory_limit": (opts.memory_limit << 20) if getattr(opts, "memory_limit", None) else None,
        }
        api.set_limits(**{k: v for k, v in limits.items() if v is not None})
        if getattr(opts, "object_depth", None) is not None:
            from squall import values

            values.set_snapshot_budget(**{**values.get_snapshot_budget(), "object_depth": opts.object_depth})
        api.start_recording()
        from squall import outputs as _outputs

        _outputs.capture()
        if hasattr(opts, "no_save") and not opts.no_save:
            _start_saving(api, opts, script_path, program_argv)
    except ImportError as e:
        _warn(f"recording unavailable ({e})")
    return hook


#: Bytes of saved entries a thread keeps in memory in a `squall run` without -i
#: (`api.save_to`'s ``memory_window``).
MEMORY_WINDOW = 64 << 20


def _start_saving(api, opts, script_path: str | None, program_argv: list[str] | None) -> None:
    if getattr(opts, "command", None) == "repl" and opts.output is None:
        return  # a REPL saves only when asked to (-o)
    program = script_path if script_path is not None else f"-m {getattr(opts, 'module', None) or 'repl'}"
    path = opts.output
    if path is None:
        import time

        stem = (
            os.path.splitext(os.path.basename(script_path))[0]
            if script_path
            else (getattr(opts, "module", None) or "repl")
        )
        path = os.path.join(".squall", f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.sqrec")
    # Nothing but the summary queries the live recording of a `squall run` without -i (--ui
    # serves the file): its saved entries need not stay in memory. A REPL's user queries it.
    run_only = getattr(opts, "command", None) == "run" and not getattr(opts, "interactive", False)
    window = MEMORY_WINDOW if run_only else None
    try:
        api.save_to(path, program=program, argv=program_argv, memory_window=window)
    except OSError as e:
        _warn(f"{e}; the recording stays in this process only")


def _serve_ui_until_interrupted(opts, saved: str | None) -> None:
    """`squall run --ui`: the UI over the recording (the saved file, or the live one with
    --no-save), up until Ctrl-C."""
    import time

    from squall import _engine, ui_cli

    own = ui_cli.user_token()
    try:
        url = _engine.serve_file(saved, "127.0.0.1", 0, own) if saved else _engine.serve_live("127.0.0.1", 0, own)
    except (OSError, ValueError) as e:
        _warn(f"the UI could not start: {e}")
        return
    if saved:  # over the file: the token reads the recording (no code runs in a program)
        shown = ui_cli.base_of(url) + "?token=<your token>" if own else url
        print(f"squall UI: {shown}  (Ctrl-C stops it)", file=sys.stderr, flush=True)
    else:
        print(
            ui_cli.announce_live(url, own is not None, "squall UI") + "  (Ctrl-C stops it)", file=sys.stderr, flush=True
        )
    if not opts.no_browser:
        try:
            import webbrowser

            webbrowser.open(url)
        except Exception:
            pass
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


def _finish_saving(outcome) -> str | None:
    """Completes the recording file; returns its path (None if not saving or it failed: then
    ``outcome.save_error`` says why, for the summary)."""
    try:
        from squall import api

        finish = lambda: api.finish_saving(  # noqa: E731
            exit_code=outcome.exit_code if outcome is not None else 0,
            interrupted=bool(outcome is not None and outcome.keyboard_interrupt),
            progress=True,
        )
        path = api.saving_to()
        try:
            return finish()
        except KeyboardInterrupt:
            # Ctrl-C after the program ended, while its file was being finished: it was
            # closed before the interrupt was seen, or it is finished now all the same.
            return path if api.saving_to() is None else finish()
    except OSError as e:
        error = str(e)
    except Exception as e:  # never change the program's outcome
        error = f"could not finish the recording file ({type(e).__name__}: {e})"
    error = error[len(f"{PROG}: ") :] if error.startswith(f"{PROG}: ") else error
    if outcome is not None:
        outcome.save_error = error
    else:
        _warn(error)
    return None


def _stop_recording() -> None:
    """The program is over: what runs now (the summary, atexit handlers) is not its work."""
    try:
        from squall import api

        api.stop_recording()
    except (Exception, KeyboardInterrupt):
        pass


def _print_summary(opts, outcome: _Outcome | None = None, saved_to: str | None = None) -> None:
    save_error = outcome.save_error if outcome is not None else None
    if opts.no_summary or opts.quiet:
        if save_error:
            _warn(save_error)
        return
    try:
        from squall.summary import render_summary

        text = render_summary(
            uncaught=outcome.uncaught if outcome is not None else None, saved_to=saved_to, save_error=save_error
        )
    except KeyboardInterrupt:  # Ctrl-C while summarizing a big recording: the program is over
        text = f"{PROG}: summary interrupted (Ctrl-C)" + (f"; the recording is saved to {saved_to}" if saved_to else "")
    except Exception as e:  # the summary must never change the program's outcome
        text = f"{PROG}: could not summarize the recording: {type(e).__name__}: {e}"
    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        print(text, file=sys.stderr if sys.stderr is not None else sys.__stderr__, flush=True)
    except (Exception, KeyboardInterrupt):
        pass
