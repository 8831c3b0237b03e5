"""Recording control (FlowStorm's ``flow-storm.api``).

Under ``squall run`` recording is on from the first line of the program. In a REPL or inside a
program that imports squall, call :func:`start_recording`: it also installs the import hook, so
modules imported from then on (within the instrumentation scope, see ``squall.config``) are
recorded.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Dict, Iterator, List, Optional

from squall import _engine

__all__ = [
    "clear_recordings",
    "current_flow",
    "engine_stats",
    "finish_saving",
    "save_to",
    "saving_to",
    "flow",
    "get_limits",
    "instrument",
    "uninstrument",
    "is_recording",
    "local_connect",
    "limits_hit",
    "set_flow",
    "set_limits",
    "start_recording",
    "stop_recording",
]

_UNCHANGED: Any = object()


def _thread_name() -> str:
    """The name of the calling thread, for the recording, changing nothing and running none of
    the program's code: ``threading.current_thread()`` would make a ``_DummyThread`` for a thread
    threading did not start (``active_count()`` and ``enumerate()`` would show it), and ``.name``
    would run a ``Thread`` subclass's property."""
    thread = threading._active.get(threading.get_ident())  # type: ignore[attr-defined]
    if thread is None:
        return "(not a threading.Thread)"
    return threading.Thread.name.fget(thread)  # type: ignore[attr-defined]


_engine.set_thread_namer(_thread_name)


def start_recording(install_hook: bool = True) -> None:
    """Starts (or resumes) recording into the current flow. Frames that were already running
    when recording started are not recorded; calls made after it are."""
    if install_hook:
        from squall._instrument import hook

        if not hook.is_installed():
            hook.install()
    _engine.start_recording()


def stop_recording() -> None:
    """Stops recording; what was recorded stays queryable."""
    _engine.stop_recording()


def is_recording() -> bool:
    return _engine.is_recording()


def clear_recordings() -> None:
    """Forgets every recording and releases the values it kept alive. Value refs obtained before
    no longer deref."""
    _engine.clear_recordings()


def set_flow(flow_id: int) -> None:
    """Records into flow ``flow_id`` from now on (FlowStorm's "Rec on flow-N")."""
    if not isinstance(flow_id, int) or isinstance(flow_id, bool) or not 0 <= flow_id < 2**32:
        raise ValueError(f"flow ids are ints from 0 to 2**32-1, got {flow_id!r}")
    _engine.set_flow(flow_id)


def current_flow() -> int:
    return _engine.current_flow()


@contextlib.contextmanager
def flow(flow_id: int) -> Iterator[int]:
    """``with squall.flow(1): ...`` records the block into flow 1, then returns to the previous
    flow."""
    previous = _engine.current_flow()
    set_flow(flow_id)
    try:
        yield flow_id
    finally:
        _engine.set_flow(previous)


def set_limits(
    thread_trace_limit: Optional[int] = _UNCHANGED,
    fn_call_limit: Optional[int] = _UNCHANGED,
    memory_limit: Optional[int] = _UNCHANGED,
) -> None:
    """Sets recording limits (None: unlimited; omitted: unchanged):

    - ``thread_trace_limit``: entries per thread timeline; the thread stops recording there;
    - ``fn_call_limit``: recorded calls per function per thread; later calls are skipped;
    - ``memory_limit``: bytes the recording holds, counted by the engine (entries, args, value
      nodes, the indexes and caches over them, the file writer's buffers while saving; it
      keeps no object of the program); recording stops everywhere.

    Each limit reached is reported once on stderr and listed by :func:`limits_hit`.
    """
    current = _engine.get_limits()
    new = {}
    for key, value in (
        ("thread_trace_limit", thread_trace_limit),
        ("fn_call_limit", fn_call_limit),
        ("memory_limit", memory_limit),
    ):
        if value is _UNCHANGED:
            new[key] = current[key]
        elif value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
            new[key] = value
        else:
            raise ValueError(f"{key} must be a positive int or None (unlimited), got {value!r}")
    _engine.set_limits(new["thread_trace_limit"], new["fn_call_limit"], new["memory_limit"])


def get_limits() -> Dict[str, Optional[int]]:
    return dict(_engine.get_limits())


def limits_hit() -> List[Dict[str, Any]]:
    """Every limit reached so far: ``limit``, ``value``, ``flow_id``, ``thread_id``,
    ``thread_name`` (and ``function`` for ``fn_call_limit``)."""
    return list(_engine.limits_hit())


def engine_stats() -> Dict[str, int]:
    """Counters of the recorder: ``entries``, ``values`` (value-store nodes, evicted ones
    included), ``values_held`` (those still in memory: while saving, saved ones leave with their
    entries), ``bytes`` (all the recording holds: entries, args, value stores, caches, the file
    writer's buffers; the memory limit applies to it) and its parts ``value_bytes``,
    ``writer_bytes``, ``timeline_bytes`` (of which ``carried_bytes``: what evicted entries left of
    the exceptions), ``index_bytes``, ``encoder_bytes``, ``identity_bytes``; ``timelines``, ``forms``,
    ``dropped`` (events lost to an internal failure), ``unmatched`` (exits of frames entered before
    recording started), ``repaired`` (frames closed without their own exit event),
    ``snapshot_errors``."""
    return dict(_engine.engine_stats())


def save_to(
    path: str, program: Optional[str] = None, argv: Optional[List[str]] = None, memory_window: Optional[int] = None
) -> str:
    """Streams the recording to ``path`` from now on (what was recorded before is included):
    flushed about every half second, so a killed or crashed program leaves a readable file.
    ``squall run`` does this for you (``-o`` chooses the path). Finish with
    :func:`finish_saving`; it is also done at interpreter exit.

    ``memory_window``: once saved, a thread's entries leave memory when it holds more than this
    many bytes of them (call counts and exceptions stay whole in live queries; the rest is in
    the file). Long runs then need much less memory and time; live queries see only the window.
    ``None`` (the default) keeps every entry in memory up to half the memory limit."""
    import atexit
    import os
    import sys

    from squall._version import __version__

    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    _engine.open_sink(
        path,
        program if program is not None else (sys.argv[0] if sys.argv else ""),
        list(argv) if argv is not None else list(sys.argv),
        sys.version,
        __version__,
        os.getcwd(),
        memory_window,
    )
    atexit.register(_finish_at_exit)
    _pause_flusher_at_fork()
    return path


_AT_FORK = []


def _pause_flusher_at_fork() -> None:
    """The flusher thread stops for an ``os.fork()`` and starts again after it in the parent:
    a process forked with a thread of squall's running is not the program's (3.12+ warns then;
    the child could not use the thread anyway)."""
    import os

    if _AT_FORK or not hasattr(os, "register_at_fork"):
        return
    _AT_FORK.append(True)
    os.register_at_fork(before=_engine.pause_flusher, after_in_parent=_engine.resume_flusher)


def finish_saving(
    exit_code: Optional[int] = None, interrupted: bool = False, progress: Optional[bool] = None
) -> Optional[str]:
    """Flushes the rest and closes the recording file, marking it complete. Returns its path
    (None if nothing was being saved). ``exit_code`` and ``interrupted`` (Ctrl-C) are written
    into the file's end marker. ``progress``: say on stderr what is being saved and how long it
    took, for a recording of over 2,000,000 entries (default: when stderr is a terminal;
    ``squall run`` says it always, before its summary)."""
    import sys

    stats = engine_stats()
    end = [(k, int(stats[k])) for k in ("entries", "values", "dropped", "unmatched") if k in stats]
    # How deep objects were read afresh (`squall run --object-depth`): a reader of the file (an
    # agent above all) learns from it which values may be shown as an earlier state.
    end.append(("object_depth", int(dict(_engine.get_snapshot_budget())["object_depth"])))
    if exit_code is not None:
        end.append(("exit_code", exit_code & 0xFFFFFFFF))
    end.append(("interrupted", 1 if interrupted else 0))
    path = _engine.sink_path()
    wanted = _isatty(sys.stderr) if progress is None else progress
    show = path is not None and wanted and stats.get("entries", 0) > SAVE_NOTICE_ENTRIES
    if show:
        _say_saving(str(path), stats["entries"])
    t0 = time.perf_counter()
    done = False
    try:
        saved = _engine.close_sink(end)
        done = True
    finally:
        if show:
            _say_saved(str(path), time.perf_counter() - t0, done)
    return None if saved is None else str(saved)


SAVE_NOTICE_ENTRIES = 2_000_000  # a smaller recording saves in well under a second


def _file_mb(path: str) -> float:
    import os

    try:
        return os.path.getsize(path) / 2**20
    except OSError:
        return 0.0


def _say_saving(path: str, entries: int) -> None:
    """The first half of the save's line: what is saved, and how much of it the flusher
    already wrote while the program ran (the rest is what the last flush writes)."""
    import sys

    sys.stderr.write(
        f"squall: saving {entries:,} entries to {path} ({_file_mb(path):.1f} MB written while "
        "the program ran); writing the rest..."
    )
    sys.stderr.flush()


def _say_saved(path: str, seconds: float, done: bool) -> None:
    import sys

    if done:
        sys.stderr.write(f" done in {seconds:.1f} s ({_file_mb(path):.1f} MB)\n")
    else:
        sys.stderr.write(f" stopped after {seconds:.1f} s\n")
    sys.stderr.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def saving_to() -> Optional[str]:
    """The recording file being written, if any."""
    path = _engine.sink_path()
    return None if path is None else str(path)


def _finish_at_exit() -> None:
    try:
        finish_saving()
    except Exception as e:  # noqa: BLE001 - never fail the interpreter's exit
        import sys

        print(f"squall: {e}", file=sys.stderr)


def instrument(target: Any) -> Any:
    """Instruments, while the program runs, a loaded module, a function or method, or a prefix
    of modules (module object, function, or dotted name like ``"app"``, ``"app.mod.func"``):
    their functions get instrumented code at once (no reload); modules under the prefix imported
    later are instrumented too. Returns a report: what was swapped, and exactly what to reload
    where Python cannot swap (closures already made, module-level code that already ran)."""
    from squall._instrument import live

    report = live.instrument(target)
    _remember_runtime(report, True)
    return report


def uninstrument(target: Any) -> Any:
    """The reverse of :func:`instrument`: calls of those functions are no longer recorded."""
    from squall._instrument import live

    report = live.uninstrument(target)
    _remember_runtime(report, False)
    return report


def _remember_runtime(report: Any, instrumented: bool) -> None:
    from squall import config

    for qualified in report.swapped:
        module = qualified.split(".")[0]
        for name in list(__import__("sys").modules):
            if qualified.startswith(name + ".") and len(name) > len(module):
                module = name
        config.remember(
            config.Explanation(
                module,
                instrumented,
                "its code was %s while the program ran (squall.api.%s)"
                % ("instrumented" if instrumented else "uninstrumented", report.action),
                None,
                "runtime",
            )
        )


def local_connect(
    host: str = "127.0.0.1", port: int = 0, open_browser: bool = False, token: Optional[str] = None
) -> str:
    """Starts the web UI over this process's live recording (for example inside a web server
    being debugged) and returns its URL, which carries the access token: ``token``, else
    ``$SQUALL_UI_TOKEN``, else a random one. **Anyone holding the token can run code in this
    process** (the UI's predicate search and runtime instrumentation evaluate Python here): the
    URL with the token is printed on stderr only when stderr is a terminal; otherwise stderr gets
    the URL without it and the path of a file only you can read (``~/.squall/ui-<pid>.url``)
    holding the whole URL. A ``host`` other than loopback is warned about (docs/security.md).
    The server runs on a background thread and never blocks the program: while it reads the
    recording for a query (milliseconds) recording pauses, and events of that moment are counted
    in ``engine_stats()["lost_during_ui"]``."""
    import sys

    from squall import ui_cli

    own = ui_cli.user_token(token)
    url = _engine.serve_live(host, port, own)
    ui_cli.warn_if_remote(host, ui_cli.base_of(url), live=True)
    print(ui_cli.announce_live(url, own is not None), file=sys.stderr, flush=True)
    if open_browser:
        try:
            import webbrowser

            webbrowser.open(url)
        except Exception:  # noqa: BLE001 - no browser: the URL is printed
            pass
    return url
