"""Runs a script or module the way ``python`` does: the same ``sys.argv``, ``__main__``,
``sys.path[0]``, tracebacks (squall's own frames left out), recursion headroom, exit code and
end (threads joined, unraisable exceptions reported, death by SIGINT after Ctrl-C)."""

from __future__ import annotations

import builtins
import os
import signal
import sys
import types
from typing import Optional

from .options import PROG, _warn

# Frames of these files are squall's own and are stripped from the program's tracebacks.
_OWN_FILES = {
    os.path.normcase(os.path.join(os.path.dirname(os.path.abspath(__file__)), name))
    for name in os.listdir(os.path.dirname(os.path.abspath(__file__)))
    if name.endswith(".py")
}


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
            "details"
        ) from None
    import re

    for line in raw.splitlines()[:2]:
        m = re.match(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", line)
        if m:
            raise SyntaxError(f"encoding problem: {m.group(1).decode('ascii', 'replace')}") from None
    return raw


def _run_script(path: str, prog_args: list[str], hook, outcome: _Outcome) -> None:
    abspath = os.path.abspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        print(f"{PROG}: can't open file {abspath!r}: [Errno {e.errno}] {e.strerror}", file=sys.stderr)
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
    main = _fresh_main(
        {
            "__name__": "__main__",
            "__doc__": None,
            "__package__": None,
            "__loader__": loader,
            "__spec__": None,
            "__annotations__": {},
            "__builtins__": builtins,
            "__file__": abspath,
            "__cached__": None,
        }
    )
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
    main = _fresh_main(
        {
            "__name__": "__main__",
            "__doc__": None,
            "__package__": spec.parent,
            "__loader__": spec.loader,
            "__spec__": spec,
            "__annotations__": {},
            "__builtins__": builtins,
            "__file__": origin if spec.has_location else None,
            "__cached__": cached,
        }
    )
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
