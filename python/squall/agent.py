"""Answers about a recording for AI agents and scripts: ``squall query`` and ``squall mcp``.

Pure functions over a :class:`squall.indexes.Queries` (``squall.load(path)`` or the live
recording) that return small JSON-able dicts with stable keys. Values are *previews*: printed
within a print level and length and cut to a few hundred characters, so an answer never floods
an agent's context. Every answer names the flow, the thread (id and name) and the entry ``idx``
of what it shows, so the next question can drill down::

    q = squall.load("run.sqrec")
    agent.summary(q)                          # flows, threads, counts, top functions, exceptions
    agent.calls(q, "process_invoice")         # each call: idx, args, what it returned or raised
    agent.call(q, 116, thread="invoice-worker")   # one call in full: parent, children
    agent.exceptions(q); agent.stack(q, 243, thread=...); agent.bindings(q, 243, thread=...)
    agent.window(q, 243, thread=...); agent.source(q, 243, thread=...); agent.search(q, "JP")

Threads are named by id (``24874``) or by name (``"invoice-worker"``); without one, the flow's
``MainThread`` (or its first thread). Bad input raises :class:`AgentError` with a message that
says what to ask instead.
"""

from __future__ import annotations

import difflib
import time
from typing import Any, Dict, List, Optional, Tuple

from squall import agent_context as _context
from squall import agent_origin
from squall import values as _values
from squall.agent_context import (  # noqa: F401 (re-exported: the API documents them here)
    _NOT_SAVED,
    _NOT_SAVED_EXC,
    DEFAULT_BUDGET,
    MAX_CHARS,
    PRINT_LENGTH,
    PRINT_LEVEL,
    WINDOW_MAX,
    AgentError,
    ThreadRef,
    _bounds,
    _count,
    _Ctx,
    _cut,
    _entry_line,
    _exc_text,
    _fit,
    preview,
    set_answer_budget,
)
from squall.indexes import Queries

__all__ = [
    "AgentError",
    "bindings",
    "call",
    "calls",
    "diff",
    "exceptions",
    "frames",
    "frequencies",
    "history",
    "origin",
    "preview",
    "search",
    "source",
    "stack",
    "summary",
    "unwind_chain",
    "window",
    "writes",
]


def summary(q: Queries, top: int = 10, max_exceptions: int = 10) -> dict:
    """What the recording holds: program, whether it completed, flows and threads with entry and
    call counts, how many functions, the most called ones, and its exceptions."""
    c = _Ctx(q)
    out: Dict[str, Any] = {}
    info = getattr(q, "info", None)
    if callable(info):
        i = info()
        out["recording"] = str(i.get("path"))
        out["program"] = i.get("program")
        out["argv"] = list(i.get("argv") or [])
        out["completed"] = bool(i.get("completed"))
        if i.get("cut_short"):
            out["cut_short"] = i["cut_short"]
        depth = (i.get("stats") or {}).get("object_depth")
        if depth is not None:
            # Objects deeper than this (known ones at 0) are shown as an earlier state, marked.
            out["object_depth"] = depth
    flows = []
    total_entries = total_calls = 0
    for fid in sorted(c.flows()):
        threads = []
        for t in c.threads(fid):
            threads.append(
                {
                    "thread_id": t["thread_id"],
                    "thread_name": t["thread_name"],
                    "entries": t["entries"],
                    "calls": t["calls"],
                }
            )
            if t.get("limit_hit"):
                threads[-1]["limit_hit"] = t["limit_hit"]
            total_entries += t["entries"]
            total_calls += t["calls"]
        shown, cut = _fit(threads, share=0.5)
        flows.append({"flow_id": fid, "threads": shown})
        if cut:
            flows[-1]["threads_left_out"] = cut
    out["flows"] = flows
    out["entries"] = total_entries
    out["calls"] = total_calls
    out["functions"] = len(c.forms)
    freq: Dict[str, int] = {}
    for fid in sorted(c.flows()):
        for s in q.fn_call_stats(fid):
            key = f"{s['fn_ns']}.{s['fn_name']}"
            freq[key] = freq.get(key, 0) + s["cnt"]
    ranked = sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))
    out["top_functions"] = [{"fn": k, "calls": n} for k, n in ranked[:top]]
    exc = exceptions(q, limit=max_exceptions)
    out["exception_count"] = exc["total"]
    out["exceptions"] = [
        {k: e[k] for k in ("flow_id", "thread_id", "thread_name", "idx", "fn", "exception", "caught_in")}
        for e in exc["exceptions"]
    ]
    return out


def _fn_names(c: _Ctx) -> List[Tuple[str, str]]:
    return sorted({(f["fn_ns"], f["fn_name"]) for f in c.forms.values()})


def _match_fns(c: _Ctx, fn: str, ns: Optional[str]) -> List[Tuple[str, str]]:
    names = _fn_names(c)
    if ns:
        names = [(m, n) for m, n in names if m == ns or m.startswith(ns + ".")]
    exact = [(m, n) for m, n in names if n == fn or f"{m}.{n}" == fn]
    if exact:
        return exact
    return [(m, n) for m, n in names if n.endswith("." + fn) or f"{m}.{n}".endswith("." + fn)]


def calls(
    q: Queries,
    fn: str,
    ns: Optional[str] = None,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    limit: int = 20,
    offset: int = 0,
    print_level: int = 2,
    print_length: int = 5,
    where: Optional[str] = None,
) -> dict:
    """The calls of a function (``process_invoice``, ``Invoice.add``, ``add``, or
    ``billing.processing.process_invoice``; ``ns`` narrows to a module): each with its thread,
    ``idx``, argument previews by parameter name and what it returned or raised. Every thread
    of the flow unless ``thread`` is given; ``where`` keeps the calls a predicate over their
    parameters, ``ret`` and ``raised`` holds for (the core's language,
    ``crates/squall_trace/src/predicate/``: ``weight == 10``, ``ret > 50``; calls it cannot
    decide for, because it reads what the recording cut, are counted in ``undecided``);
    ``offset``/``limit`` page through (``total`` counts the matching calls)."""
    limit, offset = _count("limit", limit), _count("offset", offset)
    c = _Ctx(q)
    fid = c.flow(flow)
    matched = _match_fns(c, fn, ns)
    if not matched:
        known = [f"{m}.{n}" for m, n in _fn_names(c)]
        close = difflib.get_close_matches(fn, known + [n for _, n in _fn_names(c)], n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `frequencies` lists the recorded functions"
        raise AgentError(f"no recorded function matches {fn!r}" + (f" in {ns!r}" if ns else "") + hint)
    tids = [c.thread(fid, thread)] if thread is not None else list(c.flows()[fid])
    bounds = _bounds(print_level, print_length)
    every: List[Tuple[int, int]] = []
    undecided, why = 0, None
    for order, tid in enumerate(tids):
        try:
            held, cannot, because = c.b.calls_where(fid, tid, matched, where)
        except ValueError as e:
            raise AgentError(str(e)) from None
        every += [(order, i) for i in held]
        undecided += len(cannot)
        why = why or because
    total = len(every)
    found = []
    for order, idx in every[offset : offset + limit]:
        tid = tids[order]
        e = c.b.entry(fid, tid, idx)
        found.append({"thread_id": tid, "thread_name": c.thread_name(fid, tid), **c.call_brief(fid, tid, e, **bounds)})
    found, cut = _fit(found)
    out = {
        "flow_id": fid,
        "fn": [f"{m}.{n}" for m, n in matched],
        "total": total,
        "offset": offset,
        "shown": len(found),
        "calls": found,
    }
    if where is not None:
        out["where"] = where
    if undecided:
        out["undecided"] = f"{undecided} call(s) not counted: the predicate cannot be decided for them ({why})"
    if offset + len(found) < total:
        out["more"] = f"{total - offset - len(found)} more call(s): ask again with offset={offset + len(found)}" + (
            " (the answer's size cap cut this page)" if cut else ""
        )
    return out


def frames(
    q: Queries,
    fn: str,
    ns: Optional[str] = None,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    limit: int = 5,
    offset: int = 0,
    where: Optional[str] = None,
) -> dict:
    """The frames of a function's calls with their locals: for each call (as ``calls`` finds
    them, ``where`` included), its thread, ``idx``, arguments, outcome and every local as it
    was when the frame ended (``locals``: name -> preview; full mode records them), at most
    ``limit`` frames from ``offset``."""
    found = calls(q, fn, ns=ns, flow=flow, thread=thread, limit=limit, offset=offset, where=where)
    c = _Ctx(q)
    fid = found["flow_id"]
    rows = []
    for call_row in found["calls"]:
        tid = call_row["thread_id"]
        e = c.b.entry(fid, tid, call_row["idx"])
        end = e["ret_idx"] if e.get("ret_idx") is not None else c.b.timeline_len(fid, tid) - 1
        local = {
            b["symbol"]: c.show(b["value_ref"], print_level=2, print_length=5, max_chars=120)
            for b in q.bindings(fid, tid, end)
        }
        rows.append({**call_row, "locals": local})
    rows, cut = _fit(rows)
    out = {k: v for k, v in found.items() if k not in ("calls", "shown", "more")}
    out.update({"shown": len(rows), "frames": rows})
    if found["offset"] + len(rows) < found["total"]:
        out["more"] = (
            f"{found['total'] - found['offset'] - len(rows)} more frame(s): ask again with offset={found['offset'] + len(rows)}"
        )
    return out


def call(
    q: Queries,
    idx: int,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    max_children: int = 20,
    print_level: int = PRINT_LEVEL,
    print_length: int = PRINT_LENGTH,
) -> dict:
    """One call in full: the function and where it is defined, its arguments, what it returned
    or raised, its parent call and its children (the calls it made, each with args and outcome).
    ``idx`` may be any entry of the frame (a return, an expression...): its call is shown."""
    max_children = _count("max_children", max_children)
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = c.thread(fid, thread)
    e = c.entry(fid, tid, idx)
    if e["type"] not in ("fn-call", "fn-resume"):
        e = c.entry(fid, tid, e["fn_call_idx"])
    bounds = _bounds(print_level, print_length)
    form = c.forms.get(e["form_id"]) or {}
    out: Dict[str, Any] = c.where(fid, tid)
    out.update(c.call_brief(fid, tid, e, **bounds))
    out["file"] = form.get("file")
    out["line"] = form.get("line")
    parent = None
    if e["parent_idx"] is not None:
        p = c.b.entry(fid, tid, e["parent_idx"])
        parent = {"idx": p["idx"], "fn": c.fn(p), "args": c.args(p, print_level=1, print_length=4)}
    out["parent"] = parent
    kids = list(c.b.callstack_node_childs(fid, tid, e["idx"], 0, None))
    small = _bounds(min(print_level, 2), min(print_length, 5))
    out["children_total"] = len(kids)
    children, _ = _fit(
        [c.call_brief(fid, tid, c.b.entry(fid, tid, k), **small) for k in kids[:max_children]], less=1500
    )
    out["children"] = children
    if len(children) < len(kids):
        out["more"] = (
            f"{len(kids) - len(children)} more child call(s): `window` from idx "
            f"{children[-1]['idx'] if children else e['idx']} lists what followed"
        )
    return out


def _raise_line(c: _Ctx, fid: int, tid: int, last_event_idx: Optional[int]) -> Optional[int]:
    """The line an exception left a frame from: that of the frame's last recorded event before
    it unwound (the statement that raised, or just before: the core's ``last_event_idx``, the
    UI's raised line)."""
    if last_event_idx is None:
        return None
    coord = c.b.entry(fid, tid, last_event_idx).get("coord")
    return coord[0] if coord else None


def unwind_chain(
    q: Queries,
    flow: int,
    thread: int,
    idx: int,
    max_frames: int = 30,
    print_level: int = 2,
    print_length: int = 5,
    _ctx: Optional[_Ctx] = None,
) -> List[dict]:
    """The frames an exception unwound, innermost first, from the fn-unwind at ``idx``: each
    ``idx`` (its call), ``fn``, ``args``, ``file``, ``line`` (where it left that frame)."""
    c = _ctx or _Ctx(q)
    u = c.entry(flow, thread, idx)
    if u["type"] != "fn-unwind":
        raise AgentError(f"idx {idx} is a {u['type']}, not an fn-unwind (see `exceptions`)")
    out = []
    bounds = _bounds(print_level, print_length)
    for call_idx, _unwind_idx, last_event_idx in c.b.unwind_chain(flow, thread, idx)[:max_frames]:
        callee = c.b.entry(flow, thread, call_idx)
        form = c.forms.get(callee["form_id"]) or {}
        out.append(
            {
                "idx": call_idx,
                "fn": c.fn(callee),
                "args": c.args(callee, **bounds),
                "file": form.get("file"),
                "line": _raise_line(c, flow, thread, last_event_idx),
            }
        )
    return out


def exceptions(q: Queries, flow: Optional[int] = None, thread: ThreadRef = None, limit: int = 20) -> dict:
    """Every exception that left a recorded frame, once each, in order: where it was raised
    (innermost frame, file and line), its type and message, the frames it unwound (``chain``,
    innermost first) and whether and where a recorded caller caught it."""
    limit = _count("limit", limit)
    c = _Ctx(q)
    fid = None if flow is None else c.flow(flow)
    tid = None
    if thread is not None:
        tid = c.thread(c.flow(flow), thread)
    found = q.exceptions(fid, tid)
    out = []
    for x in found[:limit]:
        f, t = x["flow_id"], x["thread_id"]
        u = c.b.entry(f, t, x["idx"])
        form = c.forms.get(u["form_id"]) or {}
        chain = unwind_chain(q, f, t, x["idx"], max_frames=10, _ctx=c)
        out.append(
            {
                **c.where(f, t),
                "idx": x["idx"],
                "fn_call_idx": x["fn_call_idx"],
                "fn": f"{x['fn_ns']}.{x['fn_name']}",
                "exception": _exc_text(c.b, x["throwable_ref"]),
                "file": form.get("file"),
                "line": chain[0]["line"] if chain else None,
                "unwound": [fr["fn"] for fr in chain],
                "caught": x["caught"],
                "caught_in": x["caught_in"],
            }
        )
    out, _ = _fit(out)
    answer: Dict[str, Any] = {"total": len(found), "shown": len(out), "exceptions": out}
    if len(out) < len(found):
        answer["more"] = f"{len(found) - len(out)} more: ask with a thread, or look at `summary`'s list"
    return answer


def writes(
    q: Queries,
    name: Optional[str] = None,
    type_name: Optional[str] = None,
    obj_id: Optional[int] = None,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    limit: int = 20,
) -> dict:
    """Where attributes or items were changed (writes in instrumented code), in the order they
    happened across all threads of the flow (oldest first): by attribute name or key ``name``, of
    objects of recorded type ``type_name`` and/or the object ``obj_id``; each with its thread,
    idx, function, file and line, the value before (``old``, and ``old_from``: "previous write"
    (``old_idx`` in thread ``old_thread_id``, which may be another thread's), "recorded state",
    "unknown (not recorded before)" or "unknown (not saved: the recording was cut short)") and
    after (``new``; ``deleted`` for a del)."""
    if name is None and type_name is None and obj_id is None:
        raise AgentError("writes needs a name, --type or --obj: e.g. `writes price --type Item`")
    limit = _count("limit", limit)
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = None if thread is None else c.thread(fid, thread)
    key: Any = name
    if isinstance(name, str) and name.lstrip("-").isdigit():
        key = int(name)  # an int key, as `writes 0 --obj 12` asks for item 0
    found = q.writes(obj_id=obj_id, attr_or_key=key, type_name=type_name, flow_id=fid, thread_id=tid, limit=limit)
    read_as = None
    if not found["total"] and type_name is None and isinstance(key, str) and "." in key.strip("."):
        # `Item.price` (how a person names it) is the attribute `price` of objects of type `Item`,
        # when no key is the dotted text itself.
        type_name, key = key.rsplit(".", 1)
        found = q.writes(obj_id=obj_id, attr_or_key=key, type_name=type_name, flow_id=fid, thread_id=tid, limit=limit)
        read_as = f"read {name!r} as attribute {key!r} of objects of type {type_name!r}"
    out = []
    for w in found["writes"]:
        out.append(
            {
                **c.where(fid, w["thread_id"]),
                "idx": w["idx"],
                "fn": w["fn"],
                "file": w["file"],
                "line": w["line"],
                "obj_id": w["obj_id"],
                "name": w["name"] if w["kind"] == "attr" else _cut(w["name_text"], MAX_CHARS),
                "kind": w["kind"],
                "old": c.show(w["old_ref"]) if w["old_ref"] is not None else None,
                "old_from": w["old_from"],
                "old_idx": w["old_idx"],
                "old_thread_id": w["old_thread_id"],
                "old_thread_name": None if w["old_thread_id"] is None else c.thread_name(fid, w["old_thread_id"]),
                "new": None if w["deleted"] else c.show(w["new_ref"]),
                "deleted": w["deleted"],
            }
        )
    out, cut = _fit(out)
    answer: Dict[str, Any] = {
        "total": found["total"],
        "shown": len(out),
        "left_out": found["left_out"] + cut,
        "writes": out,
    }
    if read_as:
        answer["read_as"] = read_as
    if answer["left_out"]:
        answer["more"] = (
            f"{answer['left_out']} more write(s): narrow with obj_id, type_name or thread, or raise "
            "limit (the answer's size cap may still cut it)"
        )
    return answer


def stack(
    q: Queries,
    idx: int,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    print_level: int = 2,
    print_length: int = 5,
) -> dict:
    """The call stack at ``idx``, innermost frame first: each frame's call ``idx``, function,
    file and line, and argument previews."""
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = c.thread(fid, thread)
    c.entry(fid, tid, idx)
    frames: List[dict] = []
    stack_frames = q.stack_for_frame(fid, tid, idx)
    used = 0
    for fr in stack_frames:
        e = c.b.entry(fid, tid, fr["fn_call_idx"])
        frame = {
            "idx": fr["fn_call_idx"],
            "fn": f"{fr['fn_ns']}.{fr['fn_name']}",
            "file": fr.get("file"),
            "line": fr.get("line"),
            "args": c.args(e, **_bounds(print_level, print_length)),
        }
        used += len(_values.safe_repr(frame)) + 2
        if _context.ANSWER_BUDGET is not None and used > _context.ANSWER_BUDGET and frames:
            break
        frames.append(frame)
    out = {**c.where(fid, tid), "idx": idx, "frames": frames}
    if len(frames) < len(stack_frames):
        out["more"] = (
            f"{len(stack_frames) - len(frames)} outer frame(s) left out by the answer's size cap: ask "
            f"`stack` at idx {frames[-1]['idx']} for the rest"
        )
    return out


def frequencies(q: Queries, flow: Optional[int] = None, thread: ThreadRef = None, limit: int = 30) -> dict:
    """How many times each recorded function was called, most called first."""
    limit = _count("limit", limit)
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = None if thread is None else c.thread(fid, thread)
    stats = q.fn_call_stats(fid, tid)
    rows = [{"fn": f"{s['fn_ns']}.{s['fn_name']}", "calls": s["cnt"]} for s in stats]
    out: Dict[str, Any] = {"flow_id": fid}
    if tid is not None:
        out.update(c.where(fid, tid))
    out.update({"functions": len(rows), "shown": min(limit, len(rows)), "frequencies": rows[:limit]})
    return out


def window(
    q: Queries,
    idx: int,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    before: int = 10,
    after: int = 10,
    print_level: int = 2,
    print_length: int = 5,
) -> dict:
    """The timeline around ``idx``: ``before`` entries before it and ``after`` after it, one
    line each (calls with args, returns with values, expressions with their source text and
    value, bindings, unwinds)."""
    before, after = _count("before", before), _count("after", after)
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = c.thread(fid, thread)
    c.entry(fid, tid, idx)
    asked = (before, after)
    before, after = min(before, WINDOW_MAX), min(after, WINDOW_MAX)
    n = c.b.timeline_len(fid, tid)
    lo, hi = max(0, idx - before), min(n, idx + after + 1)
    bounds = _bounds(print_level, print_length)
    rows = [_entry_line(c, fid, tid, e, bounds) for e in c.b.entries(fid, tid, lo, hi)]
    # Keep the rows nearest idx that fit the answer's budget: alternate after and before.
    at = idx - lo
    order = sorted(range(len(rows)), key=lambda k: (abs(k - at), k < at))
    kept, _ = _fit([rows[k] for k in order])
    keep = sorted(order[: len(kept)])
    rows = [rows[k] for k in keep]
    first, last = (lo + keep[0], lo + keep[-1]) if keep else (idx, idx)
    out = {**c.where(fid, tid), "idx": idx, "first": first, "last": last, "entries_in_thread": n, "entries": rows}
    notes = []
    if asked != (before, after):
        notes.append(f"at most {WINDOW_MAX} entries either side: asked {asked[0]} before and {asked[1]} after")
    if (first, last) != (lo, hi - 1):
        notes.append(f"the answer's size cap kept entries {first}..{last} of {lo}..{hi - 1}")
    if notes:
        out["capped"] = "; ".join(notes) + (f". For more, ask `window` at idx {first} (before) or {last} (after) again")
    return out


def bindings(
    q: Queries,
    idx: int,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    print_level: int = PRINT_LEVEL,
    print_length: int = PRINT_LENGTH,
) -> dict:
    """The locals of ``idx``'s frame as they were at ``idx``: each name's latest binding (the
    parameters first), with its value preview and the line that bound it (full mode)."""
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = c.thread(fid, thread)
    e = c.entry(fid, tid, idx)
    call_idx = e["idx"] if e["type"] in ("fn-call", "fn-resume") else e["fn_call_idx"]
    call_e = c.b.entry(fid, tid, call_idx)
    rows = []
    for b in q.bindings(fid, tid, idx):
        row = {
            "symbol": b["symbol"],
            "value": c.show(b["value_ref"], print_level=print_level, print_length=print_length),
            "line": b["coord"][0] if b.get("coord") else None,
            "since_idx": b["visible_after"],
        }
        if b.get("state_idx") is not None:
            # The object changed after it was bound: its newest state up to idx, from this entry
            # (with `writes_applied`: the last write applied to its last recorded state).
            row["state_idx"] = b["state_idx"]
        if b.get("writes_applied"):
            row["writes_applied"] = b["writes_applied"]
        rows.append(row)
    rows, cut = _fit(rows)
    out = {**c.where(fid, tid), "idx": idx, "fn_call_idx": call_idx, "fn": c.fn(call_e), "bindings": rows}
    if cut:
        out["more"] = f"{cut} more local(s) left out by the answer's size cap"
    return out


def history(q: Queries, obj_id: int, flow: Optional[int] = None, thread: ThreadRef = None, limit: int = 50) -> dict:
    """Every recorded state of the object with identity ``obj_id`` (the ``#N`` of a preview),
    oldest first, each with the thread and idx that first recorded it and its preview, and the
    recorded writes to it in between (``kind`` "write": the attribute or key, the new value, and
    the object's preview as of that write); all threads merged in recorded order unless
    ``thread`` picks one. At most ``limit`` rows: the first ``limit - 1`` and the last,
    ``left_out`` says how many in between were not shown."""
    limit = _count("limit", limit)
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = None if thread is None or thread == "" else c.thread(fid, thread)
    if not isinstance(obj_id, int) or obj_id <= 0:
        raise AgentError(
            f"object id {obj_id!r} is not one: pass the number after '#' in a preview (e.g. 12 for list#12)"
        )
    states = q.history(obj_id, flow_id=fid, thread_id=tid)
    shown = states if len(states) <= limit else states[: max(limit - 1, 0)] + states[-1:]
    rows = []
    for s in shown:
        row = {
            "kind": s.get("kind", "state"),
            "thread_id": s["thread_id"],
            "thread_name": c.thread_name(fid, s["thread_id"]),
            "idx": s["idx"],
            "value": s["preview"],
        }
        if row["kind"] == "write":
            target = f".{s['name']}" if s["is_attr"] else f"[{s['name']}]"
            row["write"] = f"del {target}" if s["new_preview"] is None else f"{target} = {s['new_preview']}"
        rows.append(row)
    n_states = sum(1 for s in states if s.get("kind", "state") == "state")
    if _fit(rows)[1]:  # too big: the first rows that fit, and the last
        head, _ = _fit(rows[:-1], less=len(str(rows[-1])))
        rows = head + rows[-1:]
    out = {
        "flow_id": fid,
        "obj_id": obj_id,
        "thread_id": tid,
        "states": n_states,
        "writes": len(states) - n_states,
        "shown": len(rows),
        "left_out": len(states) - len(rows),
        "history": rows,
    }
    if out["left_out"]:
        out["more"] = (
            f"{out['left_out']} row(s) between the last two shown are left out: pass a thread, "
            "or ask `writes` with this obj_id for the changes only"
        )
    return out


def source(q: Queries, idx: int, flow: Optional[int] = None, thread: ThreadRef = None, context: int = 3) -> dict:
    """The source around what ``idx`` recorded: the file of its function, the lines of the
    entry's coord (marked ``>``) with ``context`` lines either side (a call: the ``def`` line)."""
    context = _count("context", context)
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = c.thread(fid, thread)
    e = c.entry(fid, tid, idx)
    form = c.forms.get(e.get("form_id")) or {}
    path = form.get("file")
    coord = e.get("coord")
    if coord:
        first, last = coord[0], coord[2]
    else:
        line = None
        if e["type"] == "fn-unwind":
            line = _raise_line(c, fid, tid, c.b.unwind_chain(fid, tid, idx)[0][2])
        first = last = line or c.line_of(fid, tid, e) or form.get("line")
    out: Dict[str, Any] = {
        **c.where(fid, tid),
        "idx": idx,
        "type": e["type"],
        "fn": c.frame_fn(e) if e["type"] not in ("fn-call", "fn-resume") else c.fn(e),
        "file": path,
        "line": first,
        "coord": list(coord) if coord else None,
    }
    if not path or first is None:
        out["lines"] = []
        out["note"] = "no source position recorded for this entry"
        return out
    lines, note = c.source_file(path)
    if note:
        out["note"] = note
    if not lines:
        out["lines"] = []
        out.setdefault("note", f"{path} is empty")
        return out
    context = max(0, min(context, 50))
    lo, hi = max(1, first - context), min(len(lines), last + context)
    width = len(str(hi))
    rows = [
        f"{'>' if first <= n <= last else ' '} {n:>{width}} | {_cut(lines[n - 1].rstrip(), 200)}"
        for n in range(lo, hi + 1)
    ]
    out["lines"], cut = _fit(rows)
    if cut:
        out["note"] = (out.get("note", "") + "; " if out.get("note") else "") + (
            f"{cut} line(s) left out by the answer's size cap: ask with a smaller context"
        )
    return out


#: Entries of one thread the core searches in one call (between calls ``search`` checks its time
#: budget, its answer cap and Ctrl-C).
_SEARCH_BATCH = 50_000


def search(
    q: Queries,
    text: str,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    limit: int = 20,
    max_seconds: Optional[float] = None,
    ignore_case: bool = True,
) -> dict:
    """Entries whose printed value contains ``text``: call arguments, return values, exceptions,
    expression values, bindings and writes, in timeline order, each with its thread, ``idx``,
    where the value was (``args``, ``return``, ``raise``, ``expr SOURCE``, ``bind NAME``,
    ``write NAME``), the function and a preview around the text. The search is the core's, the
    one the UI's search runs (``crates/squall_trace/src/search.rs``). Stops at ``limit`` hits or
    after ``max_seconds`` (``complete`` says whether every entry was searched); Ctrl-C stops it
    too and returns what was found."""
    limit = _count("limit", limit)
    if not isinstance(text, str) or not text.strip():
        raise AgentError(
            f"search text {text!r} is empty or blank: it would match every value; pass a word or "
            "number the value you look for contains (e.g. 'JP' or '-3')"
        )
    c = _Ctx(q)
    needle = text.lower() if ignore_case else text
    fids = [c.flow(flow)] if flow is not None else sorted(c.flows())
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    hits: List[dict] = []
    scanned = 0
    complete = True
    interrupted = False
    used = 0
    where_of = {"fn-call": "args", "fn-resume": "args", "fn-return": "return", "fn-unwind": "raise"}

    try:
        for fid in fids:
            tids = [c.thread(fid, thread)] if thread is not None else list(c.flows()[fid])
            for tid in tids:
                n = c.b.timeline_len(fid, tid)
                at = 0
                while at < n:
                    if len(hits) >= limit or (deadline is not None and time.monotonic() > deadline):
                        complete = False
                        raise StopIteration
                    found = c.b.search(
                        fid,
                        tid,
                        text,
                        from_idx=at,
                        to_idx=min(n, at + _SEARCH_BATCH),
                        limit=limit - len(hits),
                        ignore_case=ignore_case,
                    )
                    batch_from, at = at, found["next_idx"]
                    scanned += at - batch_from
                    for idx, full in found["hits"]:
                        e = c.b.entry(fid, tid, idx)
                        t = e["type"]
                        where = where_of.get(t)
                        if t == "bind":
                            where = f"bind {e['symbol']}"
                        elif t == "write":
                            where = f"write {e['symbol']}" if e.get("symbol") else "write"
                        elif t == "expr":
                            where = f"expr {c.source_text(e['form_id'], e.get('coord')) or '?'}"
                        hits.append(
                            {
                                **c.where(fid, tid),
                                "idx": idx,
                                "in": where,
                                "fn": c.fn(e) if t in ("fn-call", "fn-resume") else c.frame_fn(e),
                                "value": _around(full, needle, ignore_case, width=160),
                            }
                        )
                        used += len(str(hits[-1])) + 2
                        if len(hits) >= limit or (_context.ANSWER_BUDGET is not None and used > _context.ANSWER_BUDGET):
                            complete = False
                            scanned -= at - (idx + 1)  # the entries after this hit are not looked at
                            raise StopIteration
    except StopIteration:
        pass
    except KeyboardInterrupt:
        complete = False
        interrupted = True
    out = {"text": text, "hits": hits, "shown": len(hits), "entries_searched": scanned, "complete": complete}
    if not complete and not interrupted and hits:
        last = hits[-1]
        why = "the answer's size cap" if len(hits) < limit else f"limit={limit}"
        out["more"] = (
            f"stopped at {why}: more hits may follow idx {last['idx']} of thread "
            f"{last['thread_name']}; raise limit, narrow the text or pass a thread"
        )
    if interrupted:
        out["interrupted"] = True
    return out


def _around(full: str, needle: str, ignore_case: bool, width: int = MAX_CHARS) -> str:
    """A preview of at most ``width`` chars that shows where ``needle`` is."""
    if len(full) <= width:
        return full
    hay = full.lower() if ignore_case else full
    at = hay.find(needle)
    start = max(0, min(at - width // 3, len(full) - width))
    body = full[start : start + width]
    return ("..." if start else "") + body + ("..." if start + width < len(full) else "")


def origin(q: Queries, idx: int, **kwargs: Any) -> dict:
    """See :func:`squall.agent_origin.origin`."""
    return agent_origin.origin(q, idx, **kwargs)


def diff(q: Queries, a_idx: Optional[int] = None, b_idx: Optional[int] = None, **kwargs: Any) -> dict:
    """See :func:`squall.agent_origin.diff`."""
    return agent_origin.diff(q, a_idx, b_idx, **kwargs)
