"""Moving through a thread's timeline: next / stepIn / stepOut, their backward forms, goto.

FlowStorm's semantics over the query API's drifts (``timeline_entry``): *step in* is the next
entry, *next* the next entry of the same frame (nested calls stepped over with ``next-over``),
*step out* the first entry back in the caller (``next-out``). An editor steps by lines, so with
the default granularity a step goes on while it stays on the same line of the same frame (a
*run*: the entries one execution of a line recorded); ``granularity: "instruction"`` steps
entry by entry. Every step lands on the first entry of a run, going forward or backward, so a
stop on a line always shows it at the same point (locals as they were at that entry).
"""

from __future__ import annotations

import linecache
import re
from typing import Any, Dict, Optional, Tuple

from squall.dap.session import DapError, Session, Thread, request

CALL_TYPES = ("fn-call", "fn-resume")
EXIT_TYPES = ("fn-return", "fn-unwind")


class Nav:
    """Position arithmetic over one thread of the recording."""

    def __init__(self, s: Session, t: Thread) -> None:
        self.s = s
        self.t = t
        self.rec = s.rec
        self.tl = s.rec.get_referenced_maps_timeline(t.flow_id, t.thread_id)
        self.last = t.entries - 1

    def entry(self, idx: int) -> Dict[str, Any]:
        return self.tl[idx]

    def drift(self, idx: int, how: str) -> int:
        return self.rec.timeline_entry(self.t.flow_id, self.t.thread_id, idx, how)["idx"]

    @staticmethod
    def frame_of(e: Dict[str, Any]) -> int:
        return e["idx"] if e["type"] in CALL_TYPES else e["fn_call_idx"]

    def loc(self, e: Dict[str, Any]) -> Tuple[str, int]:
        form = self.s.form(e["form_id"])
        coord = e.get("coord")
        if coord:
            return form["file"], coord[0]
        if e["type"] == "fn-unwind":
            return form["file"], self.unwind_line(e) or form["line"]
        return form["file"], form["line"]

    def unwind_line(self, e: Dict[str, Any]) -> Optional[int]:
        """Where an exception left a frame (the recording does not say): at the call that
        raised it, when it came out of a recorded call; else after the frame's last entry."""
        frame = e["fn_call_idx"]
        p = self.entry(e["idx"] - 1)
        if p["type"] == "fn-unwind" and p["fn_call_idx"] != frame:
            child = self.outermost_child_call(p["idx"], frame)
            before = self.before(child, frame)
            if before is not None:
                return self.call_line(self.entry(child), before)
        prev = self.before(e["idx"], frame)
        if prev is None or prev == frame:
            return None
        return self.loc(self.entry(prev))[1]

    def call_line(self, call: Dict[str, Any], before: int) -> Optional[int]:
        """The line of the caller that made ``call``, ``before`` being the caller's last entry
        before it. A call leaves no entry of its own in the caller; when the caller recorded the
        call's value just after it (``recorded_call_line``), that entry's line is the call's.
        Else it is found in the source: the first place after ``before``'s expression that names
        the callee followed by ``(``."""
        be = self.entry(before)
        if call["type"] == "fn-resume":
            # Resumed by next() / send() / a for loop, not by its name: the caller's first entry
            # after the segment suspends is on that line when it takes the value.
            ret = call.get("ret_idx")
            if ret is not None and ret < self.last:
                after = self.entry(ret + 1)
                if after.get("coord") and after["fn_call_idx"] == self.frame_of(be):
                    return after["coord"][0]
            return None
        file, lo = self.loc(be)
        coord = be.get("coord")
        col = coord[3] if coord and be["type"] not in CALL_TYPES else 0
        if coord:
            lo = coord[2]
        parts = call["fn_name"].split(".")
        short = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]
        if short.startswith("<"):
            return None
        pattern = re.compile(r"\b" + re.escape(short) + r"\s*\(")
        exact = self.recorded_call_line(call, be, file, short)
        if exact is not None:
            return exact
        for line in range(lo, lo + 40):
            text = linecache.getline(file, line)
            if not text:
                return None
            if pattern.search(text[col:] if line == lo else text):
                return line
        return None

    def recorded_call_line(self, call: Dict[str, Any], be: Dict[str, Any], file: str, short: str) -> Optional[int]:
        """The line of ``call`` when the caller recorded the call's value right after it
        returned (full mode: a call statement, an ``if f(x):`` test, a method call): the
        caller's next entry is an ``expr`` whose source is the callee's name and ``(``, after
        ``obj.`` for a method."""
        ret = call.get("ret_idx")
        if ret is None or ret >= self.last or self.entry(ret)["type"] != "fn-return":
            return None
        after = self.entry(ret + 1)
        c = after.get("coord")
        if after["type"] != "expr" or not c or self.frame_of(after) != self.frame_of(be):
            return None
        text = linecache.getline(file, c[0]).encode()
        end = c[3] if c[2] == c[0] else len(text)
        src = text[c[1] : end].decode("utf-8", errors="replace")
        return c[0] if re.match(r"(?:\w+\s*\.\s*)*" + re.escape(short) + r"\s*\(", src) else None

    def key(self, idx: int) -> Tuple[int, Tuple[str, int], str]:
        e = self.entry(idx)
        return self.frame_of(e), self.loc(e), e["type"]

    # --- runs ----------------------------------------------------------------------------------

    def prev_in_frame(self, idx: int) -> Optional[int]:
        """The previous entry of ``idx``'s frame, nested calls stepped over; None at its start."""
        e = self.entry(idx)
        if e["type"] in CALL_TYPES:
            return None
        return self.before(idx, self.frame_of(e))

    def before(self, idx: int, frame: int) -> Optional[int]:
        """The last entry of ``frame`` before ``idx``, nested calls stepped over (the frame's
        call entry itself if nothing came between)."""
        j = idx
        while j > frame:
            p = j - 1
            if self.frame_of(self.entry(p)) == frame:
                return p
            # Inside a nested call: jump to that call's start, then before it.
            j = self.outermost_child_call(p, frame)
        return None

    def outermost_child_call(self, idx: int, frame: int) -> int:
        """The fn-call, directly made from ``frame``, whose frame holds ``idx``."""
        e = self.entry(idx)
        call = self.frame_of(e)
        while True:
            ce = self.entry(call)
            parent = ce.get("parent_idx")
            if parent is None or parent == frame or parent < frame:
                return call
            call = parent

    def run_start(self, idx: int) -> int:
        """The first entry of the run holding ``idx``."""
        e = self.entry(idx)
        if e["type"] in CALL_TYPES:
            return idx
        frame, loc = self.frame_of(e), self.loc(e)
        j = idx
        while True:
            p = self.prev_in_frame(j)
            if p is None:
                return j
            pe = self.entry(p)
            if pe["type"] in CALL_TYPES or self.loc(pe) != loc or self.frame_of(pe) != frame:
                return j
            j = p

    # --- steps forward -------------------------------------------------------------------------

    def step_in(self, idx: int, by_entry: bool) -> int:
        frame, loc, _ = self.key(idx)
        j = idx
        while j < self.last:
            j = j + 1
            if by_entry:
                return j
            f2, l2, ty = self.key(j)
            if f2 != frame or l2 != loc or ty in CALL_TYPES:
                # Back in a caller, its run may have started before the call: land after it.
                start = self.run_start(j)
                return start if start > idx else j
        return j

    def next(self, idx: int, by_entry: bool) -> int:
        e = self.entry(idx)
        frame, loc = self.frame_of(e), self.loc(e)
        if e["type"] in EXIT_TYPES:
            # The frame ends here: the next entry is back in the caller.
            return self.step_in(idx, by_entry)
        j = idx
        while j < self.last:
            # From the frame's own call entry, next-over would jump to its end.
            n = j + 1 if j == frame else self.drift(j, "next-over")
            if n <= j:
                n = j + 1
            j = n
            je = self.entry(j)
            if self.frame_of(je) != frame:
                if je["type"] not in CALL_TYPES and je["fn_call_idx"] < frame:
                    return self.run_start(j)  # left the frame without an exit entry (cut short)
                continue
            if by_entry or self.loc(je) != loc or je["type"] in EXIT_TYPES:
                return j
        return j

    def step_out(self, idx: int) -> int:
        return self.drift(idx, "next-out")

    # --- steps backward ------------------------------------------------------------------------

    def step_in_back(self, idx: int, by_entry: bool) -> int:
        if by_entry:
            return max(idx - 1, 0)
        start = self.run_start(idx)
        return self.run_start(start - 1) if start > 0 else 0

    def step_back(self, idx: int, by_entry: bool) -> int:
        start = idx if by_entry else self.run_start(idx)
        p = self.prev_in_frame(start) if self.entry(start)["type"] not in CALL_TYPES else None
        if p is None:
            # At the frame's start: back into the caller, before the call.
            return self.step_in_back(start, by_entry) if start > 0 else 0
        return p if by_entry else self.run_start(p)

    def step_out_back(self, idx: int) -> int:
        call = self.frame_of(self.entry(idx))
        if call == 0:
            return 0
        return self.run_start(call - 1)


def _by_entry(args: Dict[str, Any]) -> bool:
    return args.get("granularity") == "instruction"


def _move(s: Session, args: Dict[str, Any], how: str) -> None:
    t = s.thread(args)
    nav = Nav(s, t)
    by_entry = _by_entry(args)
    before = t.idx
    if how == "next":
        t.idx = nav.next(t.idx, by_entry)
    elif how == "stepIn":
        t.idx = nav.step_in(t.idx, by_entry)
    elif how == "stepOut":
        t.idx = nav.step_out(t.idx)
    elif how == "stepBack":
        t.idx = nav.step_back(t.idx, by_entry)
    elif how == "stepInBack":
        t.idx = nav.step_in_back(t.idx, by_entry)
    elif how == "stepOutBack":
        t.idx = nav.step_out_back(t.idx)
    description = None
    if t.idx == before:
        description = "the start of the recording" if how.endswith("Back") else "the end of the recording"
    s.stopped(t, "step", description)


@request("next")
def next_(s: Session, args: Dict[str, Any]) -> None:
    _move(s, args, "next")


@request("stepIn")
def step_in(s: Session, args: Dict[str, Any]) -> None:
    _move(s, args, "stepIn")


@request("stepOut")
def step_out(s: Session, args: Dict[str, Any]) -> None:
    _move(s, args, "stepOut")


@request("stepBack")
def step_back(s: Session, args: Dict[str, Any]) -> None:
    _move(s, args, "stepBack")


@request("squall/stepInBack")
def step_in_back(s: Session, args: Dict[str, Any]) -> None:
    """The reverse of stepIn: the previous run, whatever frame holds it."""
    _move(s, args, "stepInBack")


@request("squall/stepOutBack")
def step_out_back(s: Session, args: Dict[str, Any]) -> None:
    """The reverse of stepOut: in the caller, the line that made the current frame's call."""
    _move(s, args, "stepOutBack")


@request("squall/gotoEntry")
def goto_entry(s: Session, args: Dict[str, Any]) -> None:
    """Jumps a thread to entry ``idx`` of its timeline (what the query API and the UI call idx)."""
    t = s.thread(args)
    idx = args.get("idx")
    if not isinstance(idx, int) or isinstance(idx, bool) or not 0 <= idx < t.entries:
        raise DapError(f"no entry {idx!r} in thread {t.name!r}: its idxs run from 0 to {t.entries - 1}")
    t.idx = idx
    s.stopped(t, "goto", f"entry {idx}")


@request("pause")
def pause(s: Session, args: Dict[str, Any]) -> None:
    t = s.thread(args)
    s.stopped(t, "pause")
