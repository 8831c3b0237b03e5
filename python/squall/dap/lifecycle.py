"""Starting and ending a session: initialize, launch (record, then debug), attach (open a
recording), configurationDone, disconnect / terminate, threads, loadedSources."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from typing import Any, Dict, List, Optional

from squall.dap.session import DapError, Session, deferred, request

EXCEPTION_FILTERS = [
    {
        "filter": "raised",
        "label": "Raised Exceptions",
        "description": "Stop where an exception left a recorded frame, caught or not",
    },
    {
        "filter": "uncaught",
        "label": "Uncaught Exceptions",
        "default": True,
        "description": "Stop where an exception no recorded caller handled left its innermost frame",
    },
]


@request("initialize")
def initialize(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    if args.get("linesStartAt1") is False or args.get("columnsStartAt1") is False:
        s.log("squall dap: this client counts lines or columns from 0; squall answers from 1")
    return {
        "supportsConfigurationDoneRequest": True,
        "supportsStepBack": True,
        "supportsFunctionBreakpoints": True,
        "supportsConditionalBreakpoints": True,
        "supportsHitConditionalBreakpoints": True,
        "supportsLogPoints": True,
        "supportsEvaluateForHovers": True,
        "supportsExceptionInfoRequest": True,
        "exceptionBreakpointFilters": EXCEPTION_FILTERS,
        "supportsGotoTargetsRequest": True,
        "supportsLoadedSourcesRequest": True,
        "supportsSteppingGranularity": True,
        "supportsTerminateRequest": True,
        "supportsRestartRequest": False,
        "supportsRestartFrame": True,
        "supportsSetVariable": False,
    }


def _opened(s: Session, args: Dict[str, Any]) -> None:
    s.launch_args = args
    s.after_response(lambda: s.ch.event("initialized"))


@request("attach")
def attach(s: Session, args: Dict[str, Any]) -> None:
    path = args.get("recording")
    if not isinstance(path, str) or not path:
        raise DapError('attach needs "recording": the path of a .sqrec file written by `squall run`')
    if args.get("cwd"):
        path = os.path.join(args["cwd"], path)
    s.open(_load(path))
    _opened(s, args)


def _load(path: str) -> Any:
    import squall

    try:
        return squall.load(path, progress=False)
    except (FileNotFoundError, ValueError) as e:
        raise DapError(str(e)) from None
    except OSError as e:
        raise DapError(f"cannot read the recording `{path}`: {e}") from None


@request("launch")
def launch(s: Session, args: Dict[str, Any]) -> Any:
    """Records the program with ``squall run -o`` in a child process, then debugs what it
    recorded. The loop keeps answering meanwhile (``disconnect`` stops the program); the
    response comes when the recording is open."""
    program, module = args.get("program"), args.get("module")
    if bool(program) == bool(module):
        raise DapError('launch needs "program" (a script path) or "module" (a module name), one of them')
    prog_args = args.get("args") or []
    if not isinstance(prog_args, list) or not all(isinstance(a, str) for a in prog_args):
        raise DapError(f'"args" must be a list of strings, got {prog_args!r}')
    cwd = args.get("cwd") or os.getcwd()
    if not os.path.isdir(cwd):
        raise DapError(f'"cwd" `{cwd}` is not a directory')
    if program and not os.path.isfile(os.path.join(cwd, program)):
        raise DapError(f'no program at `{os.path.join(cwd, program)}`: check "program" (relative to "cwd")')
    out = args.get("recordingPath")
    if out:
        out = os.path.join(cwd, out)
    else:
        fd, out = tempfile.mkstemp(prefix="squall-dap-", suffix=".sqrec")
        os.close(fd)
        os.unlink(out)
        s.temp_recording = out
    python = args.get("python") or sys.executable
    extra = args.get("squallArgs") or []
    target: List[str] = ["-m", module] if module else [program]
    cmd = [python, "-m", "squall", "run", "-q", "-o", out, *extra, *target, *prog_args]
    env = dict(os.environ)
    env.update({k: str(v) for k, v in (args.get("env") or {}).items()})
    try:
        child = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as e:
        raise DapError(f"cannot start `{python}` to record the program: {e}") from None
    s.child = child
    request_msg = s.current_request
    what = f"module `{module}`" if module else f"`{program}`"
    s.pending_launch = (request_msg, what)
    kept = "" if args.get("recordingPath") else " (removed when the session ends: set recordingPath to keep it)"
    s.output(f"squall: recording {what} to {out}{kept}\n", "console")
    tails: Dict[str, List[str]] = {"stdout": [], "stderr": []}
    pumps = [
        threading.Thread(target=_pump, args=(s, child.stdout, name, tails[name]), daemon=True)
        for name in ("stdout", "stderr")
    ]
    for p in pumps:
        p.start()

    def finish() -> None:
        code = child.wait()
        for p in pumps:
            p.join()
        with s.lock:
            s.child = None
            s.pending_launch = None
            if s.done:
                return  # disconnect answered the launch
            s._after = []
            try:
                if not os.path.exists(out):
                    tail = "".join(tails["stderr"][-20:]).strip()
                    raise DapError(
                        f"{what} exited with code {code} and left no recording" + (f":\n{tail}" if tail else "")
                    )
                rec = _load(out)
                if code != 0:
                    s.output(f"squall: the program exited with code {code}; debugging what it recorded\n", "important")
                s.open(rec)
            except DapError as e:
                s.ch.fail(request_msg, str(e))
                return
            s.ch.respond(request_msg, None)
            _opened(s, args)
            for fn in s._after:
                fn()

    threading.Thread(target=finish, daemon=True).start()
    return deferred()


def _pump(s: Session, stream: Any, category: str, tail: List[str]) -> None:
    for raw in iter(stream.readline, b""):
        text = raw.decode("utf-8", "replace")
        tail.append(text)
        del tail[:-50]
        s.output(text, category)


@request("configurationDone")
def configuration_done(s: Session, args: Dict[str, Any]) -> None:
    """The editor has set its breakpoints: stop at the first hit (or at the entry with
    ``stopOnEntry``, or when there are no breakpoints)."""
    s.need_recording()
    s.configured = True
    t = s.main_thread
    assert t is not None
    bps = s.breakpoints
    if s.launch_args.get("stopOnEntry") or not bps.any():
        t.idx = 0
        s.stopped(t, "entry")
        return
    bps.run_to_first_hit(t)


@request("disconnect", "terminate")
def disconnect(s: Session, args: Dict[str, Any]) -> None:
    s.stop_child()
    s.done = True
    if s.pending_launch is not None:
        launch_request, what = s.pending_launch
        s.pending_launch = None
        s.ch.fail(launch_request, f"the session ended while {what} was being recorded")
    s.after_response(lambda: s.ch.event("terminated"))


@request("threads")
def threads(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    if s.rec is None:
        return {"threads": []}
    return {"threads": [{"id": t.dap_id, "name": t.name} for t in s.threads.values()]}


@request("loadedSources")
def loaded_sources(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    s.need_recording()
    files = sorted({f["file"] for f in s.forms.values() if f.get("file")})
    return {"sources": [source_of(f) for f in files]}


def source_of(path: Optional[str]) -> Dict[str, Any]:
    if not path:
        return {"name": "<unknown>"}
    if os.path.exists(path):
        return {"name": os.path.basename(path), "path": path}
    # Code with no file (exec'd strings, REPL input): named, not readable.
    return {"name": os.path.basename(path), "path": path, "presentationHint": "deemphasize"}
