"""Breakpoints over a recording, and continue / reverseContinue to them.

A line breakpoint is hit where a *run* of its line starts (navigation.py: the entries one
execution of a line recorded in its frame), found with ``find_expr_entry`` (any entry kind at
that file and line); a function breakpoint where a call of the function starts
(``find_fn_call_entry``); an exception breakpoint where an exception left its innermost
recorded frame (``exceptions``: ``raised`` for all, ``uncaught`` for those no recorded caller
handled). A condition is a Python expression over the recorded locals at the hit; a hit count
counts the hits (whose condition holds) from the start of the thread, so ``3`` always means the
third time that line ran, whichever way one got there. A logpoint prints its message, its
``{expressions}`` evaluated over the recording, when a forward search passes it.
"""

from __future__ import annotations

import bisect
import heapq
import re
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

from squall import agent
from squall.dap.lifecycle import source_of
from squall.dap.navigation import Nav
from squall.dap.session import DapError, Session, Thread, norm_path, request

#: A search for a hit gives up (and stops where it got to) after this many seconds.
SEARCH_SECONDS = 10.0

_HIT = re.compile(r"^\s*(==|>=|>|<=|<|%)?\s*(\d+)\s*$")


class Bp:
    def __init__(self, bp_id: int, spec: Dict[str, Any]) -> None:
        self.id = bp_id
        self.condition: Optional[str] = spec.get("condition") or None
        self.log: Optional[str] = spec.get("logMessage") or None
        self.hit_text: Optional[str] = spec.get("hitCondition") or None
        self.hit: Optional[Tuple[str, int]] = None
        self.error: Optional[str] = None
        if self.hit_text:
            m = _HIT.match(self.hit_text)
            if m is None:
                self.error = (
                    f"hit count `{self.hit_text}` is not understood: write N (the Nth hit), >= N, > N, <= N, < N or % N"
                )
            else:
                self.hit = (m.group(1) or "==", int(m.group(2)))
        if self.condition:
            try:
                compile(self.condition, "<condition>", "eval")
            except SyntaxError as e:
                self.error = f"condition `{self.condition}` is not a Python expression: {e.msg}"
        # thread dap id -> every hit whose condition holds, ascending (for hit counts).
        self.all_hits: Dict[int, List[int]] = {}

    def hit_ok(self, ordinal: int) -> bool:
        if self.hit is None:
            return True
        op, n = self.hit
        return {
            "==": ordinal == n,
            ">=": ordinal >= n,
            ">": ordinal > n,
            "<=": ordinal <= n,
            "<": ordinal < n,
            "%": n > 0 and ordinal % n == 0,
        }[op]


class LineBp(Bp):
    def __init__(self, bp_id: int, spec: Dict[str, Any], path: str) -> None:
        super().__init__(bp_id, spec)
        self.path = path
        self.line = int(spec["line"])


class FnBp(Bp):
    def __init__(self, bp_id: int, spec: Dict[str, Any], targets: List[Tuple[str, str]]) -> None:
        super().__init__(bp_id, spec)
        self.name = spec["name"]
        self.targets = targets


class Breakpoints:
    def __init__(self, s: Session) -> None:
        self.s = s
        self.lines: Dict[str, List[LineBp]] = {}
        self.fns: List[FnBp] = []
        self.exc_filters: set = set()
        self._next_id = 0
        self._exceptions: Dict[int, List[Dict[str, Any]]] = {}

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def any(self) -> bool:
        return any(self.lines.values()) or bool(self.fns) or bool(self.exc_filters)

    # --- exceptions ------------------------------------------------------------------------------

    def exceptions(self, t: Thread) -> List[Dict[str, Any]]:
        if t.dap_id not in self._exceptions:
            found = self.s.rec.exceptions(flow_id=t.flow_id, thread_id=t.thread_id)
            self._exceptions[t.dap_id] = sorted(found, key=lambda x: x["idx"])
        return self._exceptions[t.dap_id]

    def exception_at(self, t: Thread, idx: int) -> Optional[Dict[str, Any]]:
        """The exception that stopped the thread at ``idx`` (or that leaves a frame there)."""
        excs = self.exceptions(t)
        i = bisect.bisect_right([x["idx"] for x in excs], idx)
        if i and excs[i - 1]["idx"] == idx:
            return excs[i - 1]
        e = Nav(self.s, t).entry(idx)
        if e["type"] != "fn-unwind" or not i:
            return None
        # An outer frame the exception unwound: the same exception as the last one raised.
        return dict(excs[i - 1], idx=idx, throwable_ref=e["throwable_ref"])

    # --- searching -------------------------------------------------------------------------------

    def _line_hits(
        self, nav: Nav, bp: LineBp, cur: int, cur_start: int, forward: bool, include_current: bool
    ) -> Iterator[int]:
        rec, t = self.s.rec, nav.t
        j = cur if include_current else (cur + 1 if forward else cur_start - 1)
        while 0 <= j <= nav.last:
            e = rec.goto_line(bp.path, bp.line, t.flow_id, t.thread_id, j, not forward)
            if e is None:
                return
            h = e["idx"]
            start = nav.run_start(h)
            if forward:
                j = h + 1
                if start != h or (start == cur_start and not include_current):
                    continue
            else:
                j = start - 1
                if start == cur_start:
                    continue
            yield start

    def _fn_hits(self, nav: Nav, bp: FnBp, cur: int, forward: bool, include_current: bool) -> Iterator[int]:
        def one(ns: str, name: str) -> Iterator[int]:
            rec, t = self.s.rec, nav.t
            j = cur if include_current else (cur + 1 if forward else cur - 1)
            while 0 <= j <= nav.last:
                e = rec.find_fn_call_entry(t.flow_id, t.thread_id, ns, name, None, j, not forward)
                if e is None:
                    return
                yield e["idx"]
                j = e["idx"] + 1 if forward else e["idx"] - 1

        return heapq.merge(*(one(ns, name) for ns, name in bp.targets), key=lambda i: i if forward else -i)

    def _exc_hits(self, t: Thread, cur: int, forward: bool, include_current: bool) -> Iterator[Tuple[int, Dict]]:
        excs = [x for x in self.exceptions(t) if "raised" in self.exc_filters or not x["caught"]]
        idxs = [x["idx"] for x in excs]
        if forward:
            i = bisect.bisect_left(idxs, cur) if include_current else bisect.bisect_right(idxs, cur)
            for x in excs[i:]:
                yield x["idx"], x
        else:
            i = bisect.bisect_left(idxs, cur)
            for x in reversed(excs[:i]):
                yield x["idx"], x

    def _candidates(self, t: Thread, cur: int, forward: bool, include_current: bool) -> Iterator[Tuple[int, str, Any]]:
        nav = Nav(self.s, t)
        cur_start = nav.run_start(cur)
        gens: List[Iterator[Tuple[int, str, Any]]] = []

        def tagged(idxs: Iterator[int], reason: str, bp: Bp) -> Iterator[Tuple[int, str, Any]]:
            # A function of its own: each generator keeps its own bp (a generator expression in
            # the loop would see the loop's last bp).
            return ((i, reason, bp) for i in idxs)

        for bps in self.lines.values():
            for bp in bps:
                if bp.error is None:
                    gens.append(
                        tagged(self._line_hits(nav, bp, cur, cur_start, forward, include_current), "breakpoint", bp)
                    )
        for fbp in self.fns:
            if fbp.error is None and fbp.targets:
                gens.append(tagged(self._fn_hits(nav, fbp, cur, forward, include_current), "function breakpoint", fbp))
        if self.exc_filters:
            gens.append((i, "exception", x) for i, x in self._exc_hits(t, cur, forward, include_current))
        return heapq.merge(*gens, key=lambda c: c[0] if forward else -c[0])

    def _holds(self, t: Thread, bp: Bp, idx: int) -> bool:
        """The hit at ``idx`` counts: its condition holds (DapError if it raised)."""
        if not bp.condition:
            return True
        from squall.dap.inspect import Frame, evaluate_at

        nav = Nav(self.s, t)
        f = Frame(t, nav.frame_of(nav.entry(idx)), idx, idx, True)
        return bool(evaluate_at(self.s, f, bp.condition))

    def _ordinal(self, t: Thread, bp: Bp, idx: int) -> int:
        """Which hit of ``bp`` in the thread ``idx`` is (1 for the first), counting from the
        start; every hit is listed once per thread, within the search's time."""
        hits = bp.all_hits.get(t.dap_id)
        if hits is None:
            nav = Nav(self.s, t)
            if isinstance(bp, LineBp):
                gen = self._line_hits(nav, bp, 0, -1, True, True)
            else:
                assert isinstance(bp, FnBp)
                gen = self._fn_hits(nav, bp, 0, True, True)
            deadline = time.monotonic() + SEARCH_SECONDS
            hits = []
            for i in gen:
                if self._holds_quietly(t, bp, i):
                    hits.append(i)
                if time.monotonic() > deadline:
                    raise DapError(
                        f"counting this breakpoint's hits took over {SEARCH_SECONDS:.0f} s "
                        f"({len(hits)} so far): drop its hit count or narrow its condition"
                    )
            bp.all_hits[t.dap_id] = hits
        return bisect.bisect_right(hits, idx)

    def _holds_quietly(self, t: Thread, bp: Bp, idx: int) -> bool:
        try:
            return self._holds(t, bp, idx)
        except DapError:
            return True

    def _log(self, t: Thread, bp: Bp, idx: int) -> None:
        from squall.dap.inspect import Frame, evaluate_at

        nav = Nav(self.s, t)
        f = Frame(t, nav.frame_of(nav.entry(idx)), idx, idx, True)

        def value(m: re.Match[str]) -> str:
            try:
                return agent.preview(evaluate_at(self.s, f, m.group(1)), 3, 10, 400)
            except DapError as e:
                return f"<{e}>"

        assert bp.log is not None
        text = re.sub(r"\{([^{}]+)\}", value, bp.log)
        file, line = nav.loc(nav.entry(idx))
        self.s.ch.event(
            "output", {"category": "console", "output": text + "\n", "source": source_of(file), "line": line}
        )

    def run_to_hit(self, t: Thread, forward: bool, include_current: bool = False) -> None:
        """Moves ``t`` to the next (previous) hit and reports the stop; to the end (start) of its
        timeline if there is none."""
        if self._find(t, forward, include_current):
            return
        if forward:
            t.idx = t.entries - 1
            self.s.stopped(t, "end", "the end of the recording (no breakpoint hit after this)")
        else:
            t.idx = 0
            self.s.stopped(t, "entry", "the start of the recording (no breakpoint hit before this)")

    def run_to_first_hit(self, main: Thread) -> None:
        """The session's first stop: the first hit in the main thread, else in the other
        threads in order, else the main thread's first entry."""
        for t in [main] + [x for x in self.s.threads.values() if x is not main]:
            t.idx = 0
            if self._find(t, True, True):
                return
        self.s.stopped(main, "entry", "no breakpoint is hit anywhere in the recording")

    def _find(self, t: Thread, forward: bool, include_current: bool) -> bool:
        deadline = time.monotonic() + SEARCH_SECONDS
        for idx, reason, what in self._candidates(t, t.idx, forward, include_current):
            if reason == "exception":
                t.idx = idx
                self.s.stopped(t, "exception", f"{what['exc_type']}: {what['message']}", exception=what)
                return True
            bp = what
            try:
                ok = self._holds(t, bp, idx) and bp.hit_ok(self._ordinal(t, bp, idx) if bp.hit else 0)
            except DapError as e:
                t.idx = idx
                self.s.stopped(t, reason, f"the breakpoint cannot be decided here: {e}", hitBreakpointIds=[bp.id])
                return True
            if ok and bp.log:
                if forward:
                    self._log(t, bp, idx)
            elif ok:
                t.idx = idx
                self.s.stopped(t, reason, None, hitBreakpointIds=[bp.id])
                return True
            if time.monotonic() > deadline:
                t.idx = idx
                self.s.stopped(
                    t,
                    "pause",
                    f"searched {SEARCH_SECONDS:.0f} s for a hit without finding one: "
                    "stopped on the way (continue searches on)",
                )
                return True
        return False


# --- requests ------------------------------------------------------------------------------------


Session.make_breakpoints = Breakpoints


@request("setBreakpoints")
def set_breakpoints(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    s.need_recording()
    bps: Breakpoints = s.breakpoints
    source = args.get("source") or {}
    path = source.get("path")
    if not path:
        raise DapError("setBreakpoints needs a source with a path")
    specs = args.get("breakpoints")
    if specs is None:
        specs = [{"line": line} for line in args.get("lines") or []]
    made: List[LineBp] = []
    out = []
    for spec in specs:
        bp = LineBp(bps.new_id(), spec, path)
        made.append(bp)
        item: Dict[str, Any] = {"id": bp.id, "line": bp.line, "source": source, "verified": bp.error is None}
        if bp.error is not None:
            item["message"] = bp.error
        elif not _line_ran(s, path, bp.line):
            item["verified"] = False
            item["message"] = f"line {bp.line} of {path} never ran in this recording (or is not instrumented)"
        out.append(item)
    bps.lines[norm_path(path)] = made
    return {"breakpoints": out}


def _line_ran(s: Session, path: str, line: int) -> bool:
    return any(s.rec.goto_line(path, line, t.flow_id, t.thread_id) is not None for t in s.threads.values())


@request("setFunctionBreakpoints")
def set_function_breakpoints(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    s.need_recording()
    bps: Breakpoints = s.breakpoints
    known = {
        (c["fn_ns"], c["fn_name"]) for fid in {t.flow_id for t in s.threads.values()} for c in s.rec.fn_call_stats(fid)
    }
    made: List[FnBp] = []
    out = []
    for spec in args.get("breakpoints") or []:
        name = str(spec.get("name", "")).strip()
        targets = sorted(
            (ns, fn) for ns, fn in known if name in (fn, f"{ns}.{fn}", f"{ns}:{fn}") or fn.endswith("." + name)
        )
        bp = FnBp(bps.new_id(), dict(spec, name=name), targets)
        made.append(bp)
        item: Dict[str, Any] = {"id": bp.id, "verified": bp.error is None and bool(targets)}
        if bp.error is not None:
            item["message"] = bp.error
        elif not targets:
            item["message"] = (
                f"no recorded call of `{name}`: name a function as `name`, `Class.method` or `module.qualname`"
            )
        out.append(item)
    bps.fns = made
    return {"breakpoints": out}


@request("setExceptionBreakpoints")
def set_exception_breakpoints(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    s.need_recording()
    filters = set(args.get("filters") or [])
    for o in args.get("filterOptions") or []:
        filters.add(o.get("filterId"))
    unknown = filters - {"raised", "uncaught"}
    if unknown:
        raise DapError(f"unknown exception filters {sorted(unknown)}: squall knows `raised` and `uncaught`")
    s.breakpoints.exc_filters = filters
    return {"breakpoints": [{"verified": True} for _ in filters]}


@request("continue")
def continue_(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    t = s.thread(args)
    s.breakpoints.run_to_hit(t, forward=True)
    return {"allThreadsContinued": False}


@request("reverseContinue")
def reverse_continue(s: Session, args: Dict[str, Any]) -> None:
    t = s.thread(args)
    s.breakpoints.run_to_hit(t, forward=False)
