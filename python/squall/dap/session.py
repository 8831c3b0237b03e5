"""One debug session: the request loop, the recording being debugged, each thread's position.

Every request is answered in order by the loop in :meth:`Session.run`; a handler raises
:class:`DapError` for what the user asked wrongly and the loop turns it into an error response.
Handlers live in the modules of this package by request family and register with
:func:`request`. A launch records the program in a child process while the loop keeps
answering (so ``disconnect`` can stop it): its completion takes the session lock, as every
handler does."""

from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Any, Callable, Dict, List, Optional

from squall.dap.protocol import Channel, ProtocolError

Handler = Callable[["Session", Dict[str, Any]], Optional[Dict[str, Any]]]
HANDLERS: Dict[str, Handler] = {}


def request(*commands: str) -> Callable[[Handler], Handler]:
    """Registers a handler for DAP requests named ``commands``; it returns the response body."""

    def register(fn: Handler) -> Handler:
        for c in commands:
            HANDLERS[c] = fn
        return fn

    return register


class DapError(Exception):
    """A request that cannot be answered as asked; the message is shown to the user."""


class Thread:
    """A recorded thread as the editor sees it: its DAP id, where it is in the recording."""

    def __init__(self, dap_id: int, flow_id: int, thread_id: int, name: str, entries: int) -> None:
        self.dap_id = dap_id
        self.flow_id = flow_id
        self.thread_id = thread_id
        self.name = name
        self.entries = entries
        self.idx = 0


class Session:
    # The breakpoints' state of an opened recording: breakpoints.py sets its class here when it
    # is imported (it registers its request handlers the same way; it imports this module).
    make_breakpoints: Callable[[Session], Any]

    def __init__(self, channel: Channel) -> None:
        self.ch = channel
        self.lock = threading.RLock()
        self.rec: Any = None
        self.threads: Dict[int, Thread] = {}
        self.main_thread: Optional[Thread] = None
        self.last_thread: Optional[Thread] = None
        # variablesReference / frameId -> what it names; both reset when a thread moves.
        self.handles: List[Any] = []
        self.frames: Dict[int, Any] = {}
        self.forms: Dict[int, Dict[str, Any]] = {}
        self.launch_args: Dict[str, Any] = {}
        self.child: Any = None
        self.pending_launch: Any = None
        self.temp_recording: Optional[str] = None
        self.configured = False
        self.done = False
        # Made in `open` by breakpoints.py's class; declared here so every module sees one shape.
        self.breakpoints: Any = None
        self.stop_info: Dict[int, Dict[str, Any]] = {}
        self.current_request: Dict[str, Any] = {}
        self.goto_targets: Dict[int, Any] = {}
        self._after: List[Callable[[], None]] = []

    # --- the loop ------------------------------------------------------------------------------

    def run(self) -> int:
        while not self.done:
            try:
                msg = self.ch.read()
            except ProtocolError as e:
                self.log(f"squall dap: {e}")
                return 1
            if msg is None:
                break
            if msg.get("type") != "request":
                continue
            self.dispatch(msg)
        self.stop_child()
        if self.temp_recording is not None:
            try:
                os.unlink(self.temp_recording)
            except OSError:
                pass  # never written (the program did not start) or already gone
        return 0

    def dispatch(self, req: Dict[str, Any]) -> None:
        command = req.get("command", "")
        handler = HANDLERS.get(command)
        if handler is None:
            self.ch.fail(req, f"squall dap does not support the request `{command}`")
            return
        args = req.get("arguments") or {}
        after: List[Callable[[], None]] = []
        with self.lock:
            self._after = after
            self.current_request = req
            try:
                body = handler(self, args)
            except DapError as e:
                self.ch.fail(req, str(e))
                return
            except Exception as e:  # noqa: BLE001 - an adapter bug must not end the session
                self.log(traceback.format_exc())
                self.ch.fail(
                    req, f"squall dap failed on `{command}`: {type(e).__name__}: {e} (a bug: please report it)"
                )
                return
            if body is not _DEFERRED:
                self.ch.respond(req, body)
            for fn in after:
                fn()

    def after_response(self, fn: Callable[[], None]) -> None:
        """Runs ``fn`` once the current request is answered (events that must follow it)."""
        self._after.append(fn)

    def log(self, text: str) -> None:
        sys.stderr.write(text.rstrip("\n") + "\n")
        sys.stderr.flush()

    def output(self, text: str, category: str = "console") -> None:
        self.ch.event("output", {"category": category, "output": text})

    # --- the recording -------------------------------------------------------------------------

    def open(self, rec: Any) -> None:
        """Starts debugging ``rec`` (a :class:`squall.recording.Recording`)."""
        # Forms have no query of their own: the backend's list, as agent.py reads it.
        self.forms = {f["form_id"]: dict(f) for f in rec._b.forms()}
        self.threads = {}
        dap_id = 0
        main = None
        flows = rec._b.all_flows()  # not rec.all_flows(): an empty file is answered below, not warned
        for fid, tids in sorted(flows.items()):
            infos = {i["thread_id"]: i for i in rec.flow_threads_info(fid)}
            for tid in tids:
                dap_id += 1
                info = infos.get(tid, {})
                name = info.get("thread_name") or f"thread {tid}"
                if fid != 0:
                    name = f"flow {fid}: {name}"
                t = Thread(dap_id, fid, tid, name, rec.timeline_count(fid, tid))
                self.threads[dap_id] = t
                if main is None or (name == "MainThread" and main.name != "MainThread"):
                    main = t
        if main is None:
            raise DapError(f"the recording `{rec.path}` holds no entries: nothing ran under squall that was recorded")
        self.rec = rec
        self.main_thread = main
        self.last_thread = main
        self.breakpoints = self.make_breakpoints(self)

    def need_recording(self) -> Any:
        if self.rec is None:
            if self.child is not None:
                raise DapError("the program is still being recorded: wait for it to finish")
            raise DapError("no recording is open: start the session with `launch` or `attach` first")
        return self.rec

    def thread(self, args: Dict[str, Any]) -> Thread:
        self.need_recording()
        tid = args.get("threadId")
        if tid is None:
            if self.last_thread is None:
                raise DapError("no thread given (threadId)")
            return self.last_thread
        t = self.threads.get(tid)
        if t is None:
            raise DapError(f"no thread {tid!r} in this recording: ask `threads` for the ids")
        return t

    def form(self, form_id: int) -> Dict[str, Any]:
        return self.forms[form_id]

    def reset_handles(self) -> None:
        self.handles = []
        self.frames = {}

    def handle(self, obj: Any) -> int:
        self.handles.append(obj)
        return len(self.handles)

    def lookup(self, ref: Any) -> Any:
        if not isinstance(ref, int) or not 0 < ref <= len(self.handles):
            raise DapError(f"no variables {ref!r}: the thread moved since they were shown; ask again")
        return self.handles[ref - 1]

    def stopped(self, t: Thread, reason: str, description: Optional[str] = None, **extra: Any) -> None:
        """Moves the editor's view: after the response, tells it ``t`` stopped for ``reason``."""
        self.reset_handles()
        self.last_thread = t
        self.stop_info[t.dap_id] = {"reason": reason, "idx": t.idx, **extra}
        body: Dict[str, Any] = {"reason": reason, "threadId": t.dap_id, "allThreadsStopped": True}
        if description:
            body["description"] = description
            body["text"] = description
        if "hitBreakpointIds" in extra:
            body["hitBreakpointIds"] = extra["hitBreakpointIds"]
        self.after_response(lambda: self.ch.event("stopped", body))

    # --- a launched program --------------------------------------------------------------------

    def stop_child(self) -> None:
        child = self.child
        if child is not None and child.poll() is None:
            child.kill()
            try:
                child.wait(timeout=10)
            except Exception:  # noqa: BLE001 - best effort at exit
                pass


_DEFERRED: Any = object()


def deferred() -> Any:
    """Returned by a handler that answers later (from another thread)."""
    return _DEFERRED


def norm_path(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))
