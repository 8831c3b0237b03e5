"""The data-flow answers for agents: ``origin`` (where a value came from, step by step back to
its sources) and ``diff`` (two calls, flows or recordings side by side, and where they first
diverge). The queries themselves are the engine's (``squall_trace::origin``, ``::diff``): this
module names threads, adds source text and bounds the answers like :mod:`squall.agent`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from squall import _engine
from squall.agent_context import AgentError, ThreadRef, _count, _Ctx, _entry_line, _fit
from squall.indexes import Queries

__all__ = ["diff", "origin"]


def _recording(c: _Ctx) -> Any:
    """The ``recording=`` argument of the engine's agent queries: None for the live one."""
    return None if c.b is _engine else c.b


def _engine_error(e: Exception) -> AgentError:
    return AgentError(str(e.args[0]) if e.args else str(e))


def _code(c: _Ctx, step: dict) -> Optional[str]:
    """The source text of a step: its site's range, stretched to the value's range when that
    follows on the same line (a binding `x = ...`, a write `obj.a = ...`)."""
    coord, span = step.get("coord"), step.get("span")
    if not coord:
        return None
    if span and span[0] == coord[2] == span[2] and span[1] >= coord[3] and step["kind"] in ("bind", "write"):
        coord = (coord[0], coord[1], span[2], span[3])
    form_id = c.form_ids.get(step.get("fn"))
    return None if form_id is None else c.source_text(form_id, coord, max_chars=80)


def origin(q: Queries, idx: int, flow: Optional[int] = None, thread: ThreadRef = None, max_steps: int = 24) -> dict:
    """Where the value of entry ``idx`` came from, breadth first: the expression, binding or call
    result that produced it, then what produced those, back to their sources (arguments passed
    by callers, literals, the writes that put a field's value there, in any thread). Each step:
    its ``step`` number and the step it feeds (``from_step``), ``via`` (how it feeds it: ``name
    X``, ``sub-expression``, ``call result``, ``argument X``, ``passed from caller``, ``write``
    to object ``obj_id``'s field), the entry (thread, ``idx``, ``kind``, function, line, source
    ``code``) and its ``value``; a step with no sources says why (``leaf``). At most
    ``max_steps`` steps; ``left_out`` counts the sources not listed."""
    max_steps = _count("max_steps", max_steps, low=1)
    c = _Ctx(q)
    c.form_ids = {f"{f['fn_ns']}.{f['fn_name']}": i for i, f in c.forms.items()}
    fid = c.flow(flow)
    tid = c.thread(fid, thread)
    e = c.entry(fid, tid, idx)
    try:
        found = _engine.origin(fid, tid, idx, max_steps, recording=_recording(c))
    except (ValueError, KeyError) as err:
        raise _engine_error(err) from None
    steps: List[dict] = []
    for s in found["steps"]:
        row: Dict[str, Any] = {
            "step": s["step"],
            "from_step": s["from_step"],
            "depth": s["depth"],
            "via": s["via"] + (f" {s['via_name']}" if s.get("via_name") else ""),
            "thread_name": c.thread_name(fid, s["thread_id"]),
            "idx": s["idx"],
            "kind": s["kind"],
            "fn": s["fn"],
            "line": s["line"],
        }
        if s["thread_id"] != tid:
            row["thread_id"] = s["thread_id"]
        if s.get("param"):
            row["param"] = s["param"]
        code = _code(c, s)
        if code:
            row["code"] = code
        if s.get("obj_id"):
            row["obj_id"] = s["obj_id"]
        row["value"] = s["value"]
        if s.get("leaf"):
            row["leaf"] = s["leaf"]
        steps.append(row)
    out: Dict[str, Any] = {**c.where(fid, tid), "idx": idx, "type": e["type"]}
    shown, cut = _fit(steps, share=1.08)
    out["steps"] = shown
    out["left_out"] = found["left_out"] + cut
    if out["left_out"]:
        last = shown[-1]["step"] if shown else 0
        out["more"] = (
            f"{out['left_out']} source(s) not listed: ask `origin` again with a larger max_steps, or of "
            f"a listed step's idx (e.g. {shown[-1]['idx']} from step {last})"
            if shown
            else ""
        )
    return out


def _side(c: _Ctx, fid: int, tid: int, idx: Optional[int]) -> dict:
    if idx is None:
        return {**c.where(fid, tid)}
    e = c.b.entry(fid, tid, idx)
    out = {**c.where(fid, tid), **c.call_brief(fid, tid, e, print_level=2, print_length=5)}
    return out


def _event(c: _Ctx, fid: int, tid: int, idx: Optional[int]) -> Optional[dict]:
    if idx is None:
        return None
    e = c.b.entry(fid, tid, idx)
    row = _entry_line(c, fid, tid, e, {"print_level": 2, "print_length": 5})
    return row


def diff(
    q: Queries,
    a_idx: Optional[int] = None,
    b_idx: Optional[int] = None,
    flow: Optional[int] = None,
    thread: ThreadRef = None,
    b_flow: Optional[int] = None,
    b_thread: ThreadRef = None,
    other: Optional[Queries] = None,
) -> dict:
    """Two calls compared (``a_idx`` and ``b_idx``: fn-call idxs; ``b_thread``/``b_flow``/
    ``other`` (another recording) place the second, by default where the first is), or, without
    idxs, two timelines (two flows, threads or recordings of the same program) compared by
    their root calls. Says whether the arguments (per parameter) and outcomes are the same
    (content compared, identities ignored), the ``path`` of child calls down to the deepest pair
    that differs, and where that pair first diverges: ``first`` (``kind`` "path": a different
    line ran, a branch taken differently; "value": the same place, another value), each side's
    entry with its line and text, and ``first_path`` (the first different line, when the first
    divergence is a value)."""
    if (a_idx is None) != (b_idx is None):
        raise AgentError(
            "diff needs two call idxs (a_idx and b_idx) to compare two calls, or neither to compare "
            "two timelines (flows, threads or recordings)"
        )
    c = _Ctx(q)
    fid = c.flow(flow)
    tid = c.thread(fid, thread)
    cb = _Ctx(other) if other is not None else c
    bfid = cb.flow(b_flow if b_flow is not None else (None if other is not None else fid))
    btid = cb.thread(bfid, b_thread if b_thread is not None else (None if other is not None else thread))
    for side, ctx, f, t, i in (("a", c, fid, tid, a_idx), ("b", cb, bfid, btid, b_idx)):
        if i is not None:
            e = ctx.entry(f, t, i)
            if e["type"] not in ("fn-call", "fn-resume"):
                raise AgentError(
                    f"{side}_idx {i} is a {e['type']}, not a call: pass the idx of an fn-call "
                    f"(its `call_idx`/`idx` in `calls`), e.g. its frame's call {e.get('fn_call_idx')}"
                )
    try:
        d = _engine.diff(fid, tid, a_idx, b_idx, bfid, btid, recording=_recording(c), b_recording=_recording(cb))
    except (ValueError, KeyError) as err:
        raise _engine_error(err) from None
    out: Dict[str, Any] = {"a": _side(c, fid, tid, a_idx), "b": _side(cb, bfid, btid, b_idx)}
    if a_idx is None:
        out["roots_a"], out["roots_b"] = d["roots_a"], d["roots_b"]
        if d["calls"] is None:
            if d["at"] is None:
                out["same"] = True
                out["verdict"] = "the two timelines made the same root calls with the same arguments and outcomes"
            else:
                out["same"] = False
                out["verdict"] = (
                    f"the root calls differ from the {d['at'] + 1}th on (another function, or one "
                    "side has more): compare them with `calls`"
                )
                out["at"] = d["at"]
            return out
        out["at"] = d["at"]
    calls = d["calls"]
    a_call, b_call = calls["a_idx"], calls["b_idx"]
    out["a"] = _side(c, fid, tid, a_call)
    out["b"] = _side(cb, bfid, btid, b_call)
    names = list(out["a"]["args"])
    out["args_equal"] = {names[i] if i < len(names) else f"arg{i}": eq for i, eq in enumerate(calls["args_equal"])}
    out["outcome_equal"] = calls["outcome_equal"]
    out["path"] = [{"a_idx": x, "b_idx": y, "fn": c.fn(c.b.entry(fid, tid, x))} for x, y in calls["path"]]
    for key in ("first", "first_path"):
        f = calls[key]
        if f is None:
            out[key] = None
            continue
        out[key] = {"kind": f["kind"], "a": _event(c, fid, tid, f["a_idx"]), "b": _event(cb, bfid, btid, f["b_idx"])}
    out["same"] = (
        calls["first"] is None and calls["outcome_equal"] and all(calls["args_equal"]) and len(calls["path"]) == 1
    )
    out["verdict"] = _verdict(out)
    return out


def _verdict(d: dict) -> str:
    if d["same"]:
        return "the two calls have the same arguments, outcome and path (content compared, identities ignored)"
    first = d.get("first")
    where = ""
    if len(d["path"]) > 1:
        where = f" inside {d['path'][-1]['fn']} (a {d['path'][-1]['a_idx']} / b {d['path'][-1]['b_idx']})"
    if first is None:
        return "the calls differ in their arguments only" + where
    a, b = first["a"], first["b"]

    def at(x: Optional[dict]) -> str:
        if x is None:
            return "nothing more (its frame ended)"
        line = f" line {x['line']}" if x.get("line") is not None else ""
        return f"idx {x['idx']}{line}: {x['text']}"

    kind = "take different paths" if first["kind"] == "path" else "first compute a different value"
    return f"the calls {kind}{where}: a at {at(a)}; b at {at(b)}"
