"""The ``squall`` command.

``squall run [options] script.py args...`` / ``squall run [options] -m pkg.mod args...`` runs a
program with recording on from the first line, the way ``python -m cProfile`` runs one: the program
sees the same ``sys.argv``, ``__name__``, ``__file__``, ``__spec__``, ``sys.path[0]`` and a fresh
``__main__`` module; stdout is the program's alone; the exit code is the one Python would give.
At the end a short summary of the recording goes to stderr (``--no-summary`` to leave it out), and
``-i`` drops into a console in the same process so the recording can be queried.

``squall repl [options]``: an instrumented REPL with recording on.
"""

from __future__ import annotations

import argparse
import builtins
import os
import signal
import sys
import types
from typing import Optional

PROG = "squall"

# Frames of these files are squall's own and are stripped from the program's tracebacks.
_OWN_FILES = {os.path.normcase(os.path.abspath(__file__))}


# --- options --------------------------------------------------------------------------------


def _add_config_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what is instrumented (also [tool.squall] in pyproject, SQUALL_* env)")
    g.add_argument("--include", action="append", default=[], metavar="PREFIX",
                   help="instrument only modules with this prefix (repeatable)")
    g.add_argument("--skip", action="append", default=[], metavar="PREFIX",
                   help="never instrument modules with this prefix (repeatable)")
    g.add_argument("--skip-regex", default=None, metavar="RE",
                   help="never instrument modules whose name matches this regex")
    g.add_argument("--mode", choices=["full", "calls"], default=None,
                   help="full: calls, returns, exceptions, expressions, bindings; calls: calls only")
    lim = p.add_argument_group("recording limits (each reached limit is reported once on stderr)")
    lim.add_argument("--thread-trace-limit", type=_positive_int, default=None, metavar="N",
                     help="entries per thread timeline; the thread stops recording there")
    lim.add_argument("--fn-call-limit", type=_positive_int, default=None, metavar="N",
                     help="recorded calls per function per thread; later calls are skipped")
    lim.add_argument("--memory-limit", type=_positive_int, default=None, metavar="MIB",
                     help="MiB of recording; recording stops there (default 4096)")
    p.add_argument("-i", dest="interactive", action="store_true",
                   help="after the program ends, open a console in this process to query the "
                        "recording (squall, indexes, values are imported)")
    p.add_argument("-o", "--output", default=None, metavar="PATH",
                   help="save the recording to PATH (default: .squall/<program>-<time>.sqrec)")
    p.add_argument("--no-save", action="store_true",
                   help="keep the recording in this process only (query it with -i)")
    p.add_argument("--no-summary", action="store_true", help="print no summary at the end")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing of squall's own "
                   "except errors (implies --no-summary)")


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
        "run", help="run a program with recording on",
        usage=f"{PROG} run [options] (script.py | -m module) [args ...]",
        description="Run a script or module with recording on from the start, as python would.",
    )
    _add_config_options(run)
    run.add_argument("-m", dest="module", default=None, metavar="MODULE",
                     help="run a library module as a script (like python -m); "
                          "the remaining arguments go to it")
    run.add_argument("--ui", action="store_true",
                     help="when the program ends, serve the web UI over its recording until Ctrl-C")
    run.add_argument("--no-browser", action="store_true",
                     help="with --ui: only print the URL, do not open a browser")
    run.add_argument("target", nargs="?", help="the script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the program")

    repl = sub.add_parser("repl", help="an instrumented REPL with recording on",
                          description="An interactive console with recording on.")
    _add_config_options(repl)

    info = sub.add_parser("info", help="what a recording file holds",
                          description="Print what a recording holds: program, argv, Python, start "
                                      "and end, flows, threads, entry counts, size, completed.")
    info.add_argument("recording", help="a .sqrec file written by `squall run`")
    info.add_argument("--json", action="store_true", help="print JSON (data only) instead of text")

    export = sub.add_parser("export", help="convert a recording (Chrome trace, SQLite)",
                            description="Write a recording as Chrome trace JSON (Perfetto, "
                                        "chrome://tracing) or as an SQLite database.")
    export.add_argument("recording", help="a .sqrec file written by `squall run`")
    export.add_argument("--format", required=True, choices=["chrome", "sqlite"])
    export.add_argument("-o", "--output", default=None, metavar="PATH",
                        help="where to write (default: the recording's path with .json / .sqlite)")

    from squall import query_cli

    query_cli.add_parser(sub)
    from squall import ui_cli

    ui_cli.add_parser(sub)
    mcp = sub.add_parser("mcp", help="serve a recording to an AI agent (MCP over stdio)",
                         description="Run a Model Context Protocol server over stdio whose tools "
                                     "answer questions about the recording (needs `pip install squall[mcp]`).")
    mcp.add_argument("recording", help="a .sqrec file written by `squall run`")
    sub.add_parser("dap", help="a Debug Adapter Protocol server on stdio (for editors: VS Code, nvim-dap)",
                   description="Serve the Debug Adapter Protocol on stdin/stdout: an editor launches a "
                               "program (recorded first) or attaches to a recording, then steps through it "
                               "forward and backward. See editors/vscode and the README.")
    return p


def _split_run_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """Splits ``run``'s argv into squall's options and the program's argv: everything from the
    script (or from ``-m MODULE``) on belongs to the program, even if it looks like an option."""
    with_value = {"--include", "--skip", "--skip-regex", "--mode", "--thread-trace-limit", "--fn-call-limit",
                  "--memory-limit", "-o", "--output"}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv[:i], argv[i + 1:]
        if a == "-m":
            return argv[:i + 2], argv[i + 2:]
        if a.startswith("-m") and len(a) > 2 and not a.startswith("--"):
            return argv[:i] + ["-m", a[2:]], argv[i + 1:]
        if a in with_value:
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return argv[:i], argv[i:]
    return argv, []


# --- configuration and recording -------------------------------------------------------------


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
        api.start_recording()
        from squall import outputs as _outputs

        _outputs.capture()
        if hasattr(opts, "no_save") and not opts.no_save:
            _start_saving(api, opts, script_path, program_argv)
    except ImportError as e:
        _warn(f"recording unavailable ({e})")
    return hook


def _start_saving(api, opts, script_path: str | None, program_argv: list[str] | None) -> None:
    if getattr(opts, "command", None) == "repl" and opts.output is None:
        return  # a REPL saves only when asked to (-o)
    program = script_path if script_path is not None else f"-m {getattr(opts, 'module', None) or 'repl'}"
    path = opts.output
    if path is None:
        import time

        stem = os.path.splitext(os.path.basename(script_path))[0] if script_path else (getattr(opts, "module", None) or "repl")
        path = os.path.join(".squall", f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.sqrec")
    try:
        api.save_to(path, program=program, argv=program_argv)
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
        print(ui_cli.announce_live(url, own is not None, "squall UI") + "  (Ctrl-C stops it)", file=sys.stderr,
              flush=True)
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
    error = error[len(f"{PROG}: "):] if error.startswith(f"{PROG}: ") else error
    if outcome is not None:
        outcome.save_error = error
    else:
        _warn(error)
    return None


def _warn(msg: str) -> None:
    print(f"{PROG}: warning: {msg}", file=sys.stderr)


def _compile_main(hook, source, path: str, raw: Optional[bytes] = None):
    """``raw``: the file's bytes ``source`` was decoded from (their hash goes into the recording)."""
    if hook is not None and hasattr(hook, "compile_main"):
        if raw is not None and hasattr(hook, "_note_source"):
            hook._note_source(path, raw, None)
        try:
            return hook.compile_main(source, path)
        except (SyntaxError, ValueError):
            raise  # the program's own error: reported as python would
        except Exception as e:  # squall's failure must not stop the program from running
            _warn(f"could not instrument {path} ({type(e).__name__}: {e}); it runs unrecorded")
    return compile(source, path, "exec", dont_inherit=True)


# --- running the program ---------------------------------------------------------------------


class _Outcome:
    def __init__(self) -> None:
        self.exit_code = 0
        self.keyboard_interrupt = False
        self.uncaught: list[BaseException] = []  # what left the program (main and threads)
        self.save_error: str | None = None  # why the recording file is not complete

    def watch_threads(self) -> None:
        """Notes the exceptions that end a thread (threading.excepthook), then reports them as
        python does."""
        import threading

        previous = threading.excepthook

        def excepthook(args, _previous=previous, _seen=self.uncaught):
            if args.exc_value is not None:
                _seen.append(args.exc_value)
            return _previous(args)

        threading.excepthook = excepthook


def _strip_own_frames(tb):
    while tb is not None and os.path.normcase(tb.tb_frame.f_code.co_filename) in _OWN_FILES:
        tb = tb.tb_next
    return tb


def _report_uncaught(exc: BaseException) -> None:
    tb = _strip_own_frames(exc.__traceback__)
    exc = exc.with_traceback(tb)
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = exc
    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:
        sys.__excepthook__(type(exc), exc, tb)


def _handle_system_exit(e: SystemExit) -> int:
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        sys.stdout.flush()
    except Exception:
        pass
    print(code, file=sys.stderr)
    return 1


def _uncount_own_frames() -> int:
    """Makes squall's frames below the program (the console script, ``main``, ``cmd_run``, ...)
    not count against the recursion limit, so that the program gets the headroom plain python
    gives it: the counter in use is shifted by all it holds but one, so that the program's
    module starts with the count plain python starts it with (measured, not derived: the same
    depth as plain python on 3.9 to 3.13, tests/test_program_unchanged.py "headroom").
    Returns the shift made (0: none, e.g. on an interpreter whose layout is not known)."""
    try:
        from squall import _engine

        used = _engine.recursion_used()
        if used is None:
            return 0
        n = used - 1
        return n if _engine.shift_recursion(n) else 0
    except Exception:  # no engine: the program runs with squall's frames counted
        return 0


def _recount_own_frames(n: int) -> None:
    if n:
        try:
            from squall import _engine

            # Refused (left shifted) if the program lowered the limit below squall's own
            # frames: squall's code after it then has more headroom, the program none less.
            _engine.shift_recursion(-n)
        except Exception:
            pass


class _own_headroom:
    """While squall finishes the recording after the program: a recursion limit the program
    lowered below what that takes (``sys.setrecursionlimit(5)``) is raised, then put back."""

    NEEDED = 1000

    def __enter__(self) -> None:
        self.limit = sys.getrecursionlimit()
        if self.limit < self.NEEDED:
            try:
                sys.setrecursionlimit(self.NEEDED)
            except Exception:
                pass

    def __exit__(self, *exc: object) -> None:
        if sys.getrecursionlimit() != self.limit:
            try:
                sys.setrecursionlimit(self.limit)
            except Exception:  # deeper now than that limit allows: left raised
                pass


def _execute(code, globs: dict, outcome: _Outcome) -> None:
    shifted = _uncount_own_frames()
    try:
        try:
            exec(code, globs)
        finally:
            _recount_own_frames(shifted)
    except SystemExit as e:
        outcome.uncaught.append(e)
        outcome.exit_code = _handle_system_exit(e)
    except KeyboardInterrupt as e:
        outcome.uncaught.append(e)
        _report_uncaught(e)
        outcome.exit_code = 130
        outcome.keyboard_interrupt = True
    except BaseException as e:  # noqa: BLE001 - the program's uncaught exception
        outcome.uncaught.append(e)
        _report_uncaught(e)
        outcome.exit_code = 1


def _fresh_main(name_globals: dict) -> types.ModuleType:
    main = types.ModuleType("__main__")
    main.__dict__.update(name_globals)
    return main


def _set_path0(entry: str) -> None:
    """sys.path[0] is the directory of the squall command itself (or the cwd under
    ``python -m squall``): replace it with what python would have put there for the program.
    Under -P / PYTHONSAFEPATH python puts nothing there, so remove it."""
    if getattr(sys.flags, "safe_path", False):
        return  # python -P added no entry for squall either: nothing to replace
    if sys.path:
        sys.path[0] = entry
    else:
        sys.path.insert(0, entry)


def _undecodable(raw: bytes, abspath: str):
    """The source could not be decoded: raise python's SyntaxError for a non-UTF-8 byte, or
    hand the bytes to compile() to report a bad encoding declaration its own way."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SyntaxError(
            f"Non-UTF-8 code starting with '\\x{raw[e.start]:02x}' in file {abspath} on line "
            f"{line}, but no encoding declared; see https://peps.python.org/pep-0263/ for "
            "details") from None
    import re

    for line in raw.splitlines()[:2]:
        m = re.match(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", line)
        if m:
            raise SyntaxError(
                f"encoding problem: {m.group(1).decode('ascii', 'replace')}") from None
    return raw


def _run_script(path: str, prog_args: list[str], hook, outcome: _Outcome) -> None:
    abspath = os.path.abspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        print(f"{PROG}: can't open file {abspath!r}: [Errno {e.errno}] {e.strerror}",
              file=sys.stderr)
        outcome.exit_code = 2
        return
    if os.path.isdir(path):  # pragma: no cover - open() of a dir raises on POSIX
        outcome.exit_code = 2
        return

    sys.argv[:] = [path] + prog_args
    _set_path0(os.path.dirname(os.path.realpath(abspath)))

    from importlib.machinery import SourceFileLoader
    from importlib.util import decode_source

    loader = SourceFileLoader("__main__", abspath)
    main = _fresh_main({
        "__name__": "__main__", "__doc__": None, "__package__": None, "__loader__": loader,
        "__spec__": None, "__annotations__": {}, "__builtins__": builtins,
        "__file__": abspath, "__cached__": None,
    })
    sys.modules["__main__"] = main
    try:
        try:
            source = decode_source(raw)
        except (UnicodeDecodeError, SyntaxError):
            source = _undecodable(raw, abspath)
        code = _compile_main(hook, source, abspath, raw)
    except (SyntaxError, ValueError) as e:
        _report_uncaught(e.with_traceback(None))
        outcome.exit_code = 1
        return
    _execute(code, main.__dict__, outcome)


def _run_module(mod_name: str, prog_args: list[str], hook, outcome: _Outcome) -> None:
    import runpy

    sys.argv[:] = ["-m"] + prog_args  # what python shows while the module is being found
    _set_path0(os.getcwd())

    class _NoModule(Exception):
        pass

    try:
        mod_name, spec, code = runpy._get_module_details(mod_name, _NoModule)  # type: ignore[attr-defined]
    except _NoModule as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        outcome.exit_code = 1
        return
    except SystemExit as e:
        outcome.exit_code = _handle_system_exit(e)
        return
    except BaseException as e:  # an error while importing the parent packages
        _report_uncaught(e)
        outcome.exit_code = 1
        return

    origin = spec.origin
    if spec.has_location and origin:
        sys.argv[0] = origin
    # Recompile the module's source through the instrumenter, as __main__.
    try:
        source = spec.loader.get_source(spec.name) if hasattr(spec.loader, "get_source") else None
    except Exception:
        source = None
    if source is not None and origin:
        try:
            raw = spec.loader.get_data(origin) if hasattr(spec.loader, "get_data") else None
        except OSError:
            raw = None
        try:
            code = _compile_main(hook, source, origin, raw)
        except (SyntaxError, ValueError) as e:
            _report_uncaught(e.with_traceback(None))
            outcome.exit_code = 1
            return

    cached = spec.cached if spec.has_location else None
    main = _fresh_main({
        "__name__": "__main__", "__doc__": None, "__package__": spec.parent,
        "__loader__": spec.loader, "__spec__": spec, "__annotations__": {},
        "__builtins__": builtins, "__file__": origin if spec.has_location else None,
        "__cached__": cached,
    })
    if not spec.has_location:
        del main.__dict__["__file__"]
    sys.modules["__main__"] = main
    _execute(code, main.__dict__, outcome)


def _wait_for_threads() -> None:
    """What Python does at exit before atexit handlers: join the non-daemon threads (and run
    threading's own atexit calls, e.g. concurrent.futures'), so the summary sees their work."""
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:
        return
    try:
        shutdown()
    except BaseException as e:  # noqa: BLE001 - e.g. Ctrl-C while waiting for the threads
        # Python's exit reports it as unraisable, "in" the threading module, and goes on: the
        # same exit code, atexit handlers, and the threads left are not waited for again.
        _write_unraisable(e, threading)


def _write_unraisable(exc: BaseException, obj: object) -> None:
    """What CPython's ``PyErr_WriteUnraisable(obj)`` does with ``exc``: ``sys.unraisablehook``
    ("Exception ignored in: ..."), with squall's own frames left out of the traceback."""
    tb = _strip_own_frames(exc.__traceback__)
    try:
        args = _unraisable_hook_args_type()((type(exc), exc, tb, None, obj))
    except Exception:  # no such type: the default hook's text, by hand
        import traceback

        try:
            print(f"Exception ignored in: {obj!r}", file=sys.stderr)
            traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
        except Exception:
            pass
        return
    try:
        sys.unraisablehook(args)
    except Exception:  # the program's hook failed: python then uses the default one
        try:
            sys.__unraisablehook__(args)
        except Exception:
            pass


def _unraisable_hook_args_type() -> type:
    """``UnraisableHookArgs``, which the default hook requires and ``sys`` does not export: taken
    from an exception raised in a ``__del__`` of squall's own, with a hook of squall's own."""
    got: list = []
    previous = sys.unraisablehook
    sys.unraisablehook = got.append

    class _Probe:
        def __del__(self):
            raise RuntimeError("squall: probing UnraisableHookArgs")

    try:
        _Probe()
    finally:
        sys.unraisablehook = previous
    return type(got[0])


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

        text = render_summary(uncaught=outcome.uncaught if outcome is not None else None, saved_to=saved_to,
                              save_error=save_error)
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


def _console_namespace() -> dict:
    ns: dict = {"__name__": "__console__", "__doc__": None}
    for name in ("squall", "squall.api", "squall.indexes", "squall.values"):
        try:
            __import__(name)
        except Exception:
            pass
    import importlib

    for short, full in (("squall", "squall"), ("api", "squall.api"),
                        ("indexes", "squall.indexes"), ("values", "squall.values")):
        try:
            ns[short] = importlib.import_module(full)
        except Exception:
            pass
    return ns


def _interact(ns: dict, banner: str) -> None:
    try:
        from squall._instrument import repl as _repl

        interact = getattr(_repl, "interact", None)
    except ImportError:
        interact = None
    if interact is not None:
        try:
            interact(local=ns, banner=banner)
            return
        except TypeError:
            interact(ns)
            return
    import code

    try:
        import readline  # noqa: F401 - line editing for the console
    except ImportError:
        pass
    code.interact(banner=banner, local=ns, exitmsg="")


def _exit_like_sigint() -> None:
    """Python's exit after an uncaught KeyboardInterrupt: die by SIGINT (shell sees 130)."""
    try:
        import atexit

        atexit._run_exitfuncs()  # type: ignore[attr-defined]
    except Exception:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass
    if hasattr(signal, "SIGINT") and hasattr(os, "kill"):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(130)


def cmd_run(opts, prog_argv: list[str]) -> int:
    if opts.module is None:
        if not prog_argv:
            print(f"usage: {PROG} run [options] (script.py | -m module) [args ...]\n"
                  f"{PROG} run: error: a script or -m MODULE is required", file=sys.stderr)
            return 2
        target, prog_args = prog_argv[0], prog_argv[1:]
    else:
        target, prog_args = None, prog_argv

    if target is not None and not os.path.exists(target):
        # Fail before touching anything, exactly as python does.
        print(f"{PROG}: can't open file {os.path.abspath(target)!r}: "
              f"[Errno 2] No such file or directory", file=sys.stderr)
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
        _interact(ns, banner=(
            f"{PROG}: the recording is in this process. Try indexes.all_flows(), "
            "indexes.fn_call_stats(0), indexes.exceptions()."))
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


def cmd_repl(opts) -> int:
    _setup_recording(opts)
    sys.argv[:] = [""]
    if sys.path and sys.path[0] != "":
        sys.path[0] = ""
    ns = _console_namespace()
    ns["__name__"] = "__main__"
    main = _fresh_main({"__name__": "__main__", "__doc__": None, "__builtins__": builtins})
    main.__dict__.update(ns)
    sys.modules["__main__"] = main
    _interact(main.__dict__, banner=(
        f"squall {_version()} on Python {sys.version.split()[0]}: recording is on.\n"
        "Query it with indexes.all_flows(), indexes.fn_call_stats(0), indexes.exceptions(); "
        "values.deref_val_id(ref)."))
    return 0


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
