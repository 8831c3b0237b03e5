"""`squall query REC SUBCOMMAND ...`: the answers of :mod:`squall.agent` from the command line,
for agents and scripts without MCP. ``--json`` prints the answer as JSON; without it, compact
text. stdout carries data only; errors go to stderr with exit status 1."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Dict, List

from squall import outputs_cli

PROG = "squall"

SUBCOMMANDS = (
    "summary",
    "calls",
    "call",
    "exceptions",
    "frequencies",
    "stack",
    "window",
    "bindings",
    "history",
    "source",
    "search",
    "writes",
    "outputs",
    "origin",
    "diff",
    "frames",
)


def add_parser(sub: Any) -> None:
    """Adds ``query`` and its subcommands to the ``squall`` parser's subparsers."""
    q = sub.add_parser(
        "query",
        help="answer questions about a recording (for agents and scripts)",
        description="Query a recording: compact, bounded answers; --json for JSON. Entry idxs are per "
        "thread: pass --thread (id or name) with an idx from another thread.",
    )
    q.add_argument("recording", help="a .sqrec file written by `squall run`")
    qs = q.add_subparsers(dest="query", metavar="QUERY")
    qs.required = True

    def new(name: str, help: str, idx: bool = False, thread: bool = True) -> argparse.ArgumentParser:
        p = qs.add_parser(name, help=help, description=help)
        if idx:
            p.add_argument("idx", type=int, help="an entry idx (from another answer)")
        p.add_argument("--flow", type=int, default=None, help="flow id (default: 0, or the first flow)")
        if thread:
            p.add_argument(
                "--thread", default=None, help="thread id or name (default: MainThread, or the flow's first thread)"
            )
        p.add_argument("--json", action="store_true", help="print JSON (data only)")
        p.add_argument(
            "--max-bytes",
            type=int,
            default=None,
            metavar="N",
            help="lists in the answer take at most about N bytes of JSON, saying what they left out "
            "(default 6000: answers under 8 KB; 0: no cap, --limit alone bounds them)",
        )
        return p

    new("summary", "program, flows, threads, counts, most called functions, exceptions", thread=False)
    p = new("calls", "the calls of a function: idx, thread, args, what it returned or raised")
    p.add_argument("fn", help="function: name, Class.method, or module.qualname")
    p.add_argument("--ns", default=None, help="only functions of this module (or package)")
    p.add_argument("--limit", type=int, default=20, help="at most N calls (default 20)")
    p.add_argument("--offset", type=int, default=0, help="skip the first N calls")
    p.add_argument(
        "--where",
        default=None,
        help="only calls this predicate holds for, over the parameters, ret and raised "
        "(e.g. 'weight == 10', 'ret > 50', 'raised is not None')",
    )
    p = new("frames", "the frames of a function's calls with their locals as each frame ended")
    p.add_argument("fn", help="function: name, Class.method, or module.qualname")
    p.add_argument("--ns", default=None, help="only functions of this module (or package)")
    p.add_argument("--where", default=None, help="only calls this predicate holds for (see calls --where)")
    p.add_argument("--limit", type=int, default=5, help="at most N frames (default 5)")
    p.add_argument("--offset", type=int, default=0, help="skip the first N frames")
    p = new("origin", "where the value of an entry came from, step by step back to its sources", idx=True)
    p.add_argument("--max-steps", type=int, default=24, help="at most N steps (default 24)")
    p = new(
        "diff",
        "two calls (A B: call idxs) or, without idxs, two threads/flows/recordings compared: where they first diverge",
    )
    p.add_argument("a_idx", type=int, nargs="?", default=None, help="the first call's idx")
    p.add_argument("b_idx", type=int, nargs="?", default=None, help="the second call's idx")
    p.add_argument("--b-thread", default=None, help="the second call's thread (default: --thread)")
    p.add_argument("--b-flow", type=int, default=None, help="the second call's flow (default: --flow)")
    p.add_argument("--other", default=None, help="the second side is in this other recording of the same program")
    p = new("call", "one call in full: args, return or exception, parent, children", idx=True)
    p.add_argument("--children", type=int, default=20, help="at most N children (default 20)")
    p = new("exceptions", "every exception: where raised, frames unwound, where caught")
    p.add_argument("--limit", type=int, default=20)
    p = new("frequencies", "calls per function, most called first")
    p.add_argument("--limit", type=int, default=30)
    new("stack", "the call stack at an idx, innermost first", idx=True)
    p = new("window", "the timeline around an idx", idx=True)
    p.add_argument("--before", type=int, default=10)
    p.add_argument("--after", type=int, default=10)
    new("bindings", "the locals of the frame at an idx, as they were then", idx=True)
    p = new(
        "history",
        "every recorded state of one object (the N of #N in a preview), oldest first, with "
        "the idx that recorded it (all threads unless --thread)",
    )
    p.add_argument("obj_id", type=int, help="the object's recorded identity: 12 for list#12")
    p.add_argument("--limit", type=int, default=50, help="at most N states (default 50: the first N-1 and the last)")
    p = new("source", "the source lines of what an idx recorded", idx=True)
    p.add_argument("--context", type=int, default=3, help="lines either side (default 3)")
    p = new("search", "values (args, results, locals, expressions, writes) whose printed text contains TEXT")
    p.add_argument("text")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--case-sensitive", action="store_true")
    p = new("writes", "where an attribute or item was changed: by which line, from what to what")
    p.add_argument("name", nargs="?", default=None, help="attribute name or key (an int key as digits)")
    p.add_argument("--type", dest="type_name", default=None, help="only objects of this recorded type (Item, mod.Item)")
    p.add_argument("--obj", type=int, default=None, help="only the object with this identity (a value's #N)")
    p.add_argument("--limit", type=int, default=20, help="at most N writes (default 20)")
    outputs_cli.add_parser(new)


def answer(rec: Any, opts: Any) -> Dict[str, Any]:
    from squall import agent

    kind = opts.query
    flow, thread = opts.flow, getattr(opts, "thread", None)
    if kind == "summary":
        return agent.summary(rec)
    if kind == "calls":
        return agent.calls(
            rec, opts.fn, ns=opts.ns, flow=flow, thread=thread, limit=opts.limit, offset=opts.offset, where=opts.where
        )
    if kind == "frames":
        return agent.frames(
            rec, opts.fn, ns=opts.ns, flow=flow, thread=thread, limit=opts.limit, offset=opts.offset, where=opts.where
        )
    if kind == "origin":
        return agent.origin(rec, opts.idx, flow=flow, thread=thread, max_steps=opts.max_steps)
    if kind == "diff":
        other = None
        if opts.other:
            from squall.files_cli import load

            other = load(opts.other)
            if other is None:
                raise agent.AgentError(f"cannot load the other recording {opts.other!r} (the reason is above)")
        return agent.diff(
            rec,
            opts.a_idx,
            opts.b_idx,
            flow=flow,
            thread=thread,
            b_flow=opts.b_flow,
            b_thread=opts.b_thread,
            other=other,
        )
    if kind == "call":
        return agent.call(rec, opts.idx, flow=flow, thread=thread, max_children=opts.children)
    if kind == "exceptions":
        return agent.exceptions(rec, flow=flow, thread=thread, limit=opts.limit)
    if kind == "frequencies":
        return agent.frequencies(rec, flow=flow, thread=thread, limit=opts.limit)
    if kind == "stack":
        return agent.stack(rec, opts.idx, flow=flow, thread=thread)
    if kind == "window":
        return agent.window(rec, opts.idx, flow=flow, thread=thread, before=opts.before, after=opts.after)
    if kind == "bindings":
        return agent.bindings(rec, opts.idx, flow=flow, thread=thread)
    if kind == "history":
        return agent.history(rec, opts.obj_id, flow=flow, thread=thread, limit=opts.limit)
    if kind == "source":
        return agent.source(rec, opts.idx, flow=flow, thread=thread, context=opts.context)
    if kind == "search":
        return agent.search(
            rec, opts.text, flow=flow, thread=thread, limit=opts.limit, ignore_case=not opts.case_sensitive
        )
    if kind == "writes":
        return agent.writes(
            rec, opts.name, type_name=opts.type_name, obj_id=opts.obj, flow=flow, thread=thread, limit=opts.limit
        )
    if kind == "outputs":
        return outputs_cli.answer(rec, opts)
    raise ValueError(f"unknown query {kind!r}")


def cmd_query(opts: Any) -> int:
    from squall.agent import AgentError
    from squall.files_cli import load

    rec = load(opts.recording)
    if rec is None:
        return 1
    from squall import agent

    agent.set_answer_budget(agent.DEFAULT_BUDGET if opts.max_bytes is None else opts.max_bytes)
    try:
        result = answer(rec, opts)
    except AgentError as e:
        print(f"{PROG} query {opts.query}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG} query {opts.query}: interrupted", file=sys.stderr)
        return 130
    try:
        if opts.json:
            print(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            print(render_text(opts.query, result))
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if result.get("interrupted"):
        print(f"{PROG} query search: interrupted; these are the hits found so far", file=sys.stderr)
    return 0


# --- compact text ---------------------------------------------------------------------------------


def _thread(d: dict) -> str:
    return f"{d['thread_name']}({d['thread_id']})"


def _outcome(d: dict) -> str:
    for key, arrow in (("returned", "->"), ("yielded", "-> yield"), ("awaited", "-> await"), ("raised", "!!")):
        if key in d:
            return f"{arrow} {d[key]}"
    return "-> <no exit recorded>"


def _call(d: dict) -> str:
    args = ", ".join(f"{k}={v}" for k, v in d["args"].items())
    resumed = " resumed" if d.get("resumed") else ""
    return f"{d['fn']}{resumed}({args}) {_outcome(d)}"


def _where(d: dict) -> str:
    file, line = d.get("file"), d.get("line")
    return f"{file}:{line}" if line is not None else str(file)


def _summary(d: dict) -> List[str]:
    out = []
    if "recording" in d:
        out.append(
            f"recording {d['recording']}  program {d['program']}  "
            f"{'completed' if d['completed'] else 'CUT SHORT: ' + str(d.get('cut_short'))}"
        )
    out.append(f"entries {d['entries']}  calls {d['calls']}  functions {d['functions']}")
    if "object_depth" in d:
        out.append(f"objects read afresh to depth {d['object_depth']}; deeper ones show an earlier state, marked")
    for f in d["flows"]:
        out.append(f"flow {f['flow_id']}:")
        for t in f["threads"]:
            extra = f"  LIMIT HIT: {t['limit_hit']}" if t.get("limit_hit") else ""
            out.append(f"  thread {_thread(t)}  {t['entries']} entries  {t['calls']} calls{extra}")
        if f.get("threads_left_out"):
            out.append(f"  ... {f['threads_left_out']} more thread(s) not listed (the answer's size cap)")
    out.append("most called:")
    out += [f"  {r['calls']:>6}  {r['fn']}" for r in d["top_functions"]]
    out.append(f"exceptions ({d['exception_count']}):")
    for e in d["exceptions"]:
        caught = f"caught in {e['caught_in']}" if e["caught_in"] else "not caught by recorded code"
        out.append(f"  idx {e['idx']} thread {_thread(e)}  {e['exception']}  in {e['fn']}  [{caught}]")
    return out


def _calls(d: dict) -> List[str]:
    where = f" where {d['where']}" if d.get("where") else ""
    out = [f"{', '.join(d['fn'])}: {d['total']} call(s){where}; showing {d['shown']} from #{d['offset']}"]
    out += [f"idx {c['idx']} thread {_thread(c)}  {_call(c)}" for c in d["calls"]]
    out += [d["undecided"]] if d.get("undecided") else []
    return out + ([d["more"]] if d.get("more") else [])


def _frames(d: dict) -> List[str]:
    out = [f"{', '.join(d['fn'])}: {d['total']} frame(s); showing {d['shown']} from #{d['offset']}"]
    for f in d["frames"]:
        out.append(f"idx {f['idx']} thread {_thread(f)}  {_call(f)}")
        out += [f"    {k} = {v}" for k, v in f["locals"].items()]
    out += [d["undecided"]] if d.get("undecided") else []
    return out + ([d["more"]] if d.get("more") else [])


def _origin(d: dict) -> List[str]:
    out = [f"origin of idx {d['idx']} ({d['type']}) thread {_thread(d)}:"]
    for s in d["steps"]:
        indent = "  " * s["depth"]
        frm = "" if s["from_step"] is None else f" <- step {s['from_step']}"
        at = f"{s['fn']}:{s['line']}" if s.get("line") is not None else str(s["fn"])
        code = f"  `{s['code']}`" if s.get("code") else ""
        thread = f" [{s['thread_name']}]" if s.get("thread_id") else ""
        obj = f" #{s['obj_id']}" if s.get("obj_id") else ""
        out.append(
            f"{indent}step {s['step']}{frm}: {s['via']}{obj}  idx {s['idx']}{thread} {s['kind']} at {at}"
            f"{code} = {s['value']}"
        )
        if s.get("leaf"):
            out.append(f"{indent}    (end: {s['leaf']})")
    if d.get("more"):
        out.append(d["more"])
    return out


def _diff(d: dict) -> List[str]:
    out = [d["verdict"]]
    for side in ("a", "b"):
        x = d[side]
        if "fn" in x:
            out.append(f"{side}: idx {x['idx']} thread {_thread(x)}  {_call(x)}")
    if d.get("args_equal"):
        out.append(
            "args equal: "
            + ", ".join(f"{k}={'yes' if v else 'NO'}" for k, v in d["args_equal"].items())
            + f"; outcome equal: {'yes' if d['outcome_equal'] else 'NO'}"
        )
    if d.get("path") and len(d["path"]) > 1:
        out.append("path: " + " -> ".join(f"{p['fn']} (a {p['a_idx']} / b {p['b_idx']})" for p in d["path"]))
    for key in ("first", "first_path"):
        f = d.get(key)
        if f:
            out.append(f"{key} ({f['kind']}):")
            for side in ("a", "b"):
                e = f[side]
                out.append(
                    f"  {side}: " + ("<frame ended>" if e is None else f"idx {e['idx']} L{e.get('line')}  {e['text']}")
                )
    return out


def _one_call(d: dict) -> List[str]:
    out = [f"idx {d['idx']} thread {_thread(d)} flow {d['flow_id']}  {d['fn']}  ({_where(d)})"]
    out.append("args:")
    out += [f"  {k} = {v}" for k, v in d["args"].items()]
    out.append(f"{_outcome(d)}   (exit idx {d['ret_idx']})")
    p = d["parent"]
    if p is None:
        out.append("parent: none recorded (called from unrecorded code)")
    else:
        out.append(f"parent: idx {p['idx']} {p['fn']}(" + ", ".join(f"{k}={v}" for k, v in p["args"].items()) + ")")
    out.append(f"children ({d['children_total']}):")
    out += [f"  idx {c['idx']}  {_call(c)}" for c in d["children"]]
    if d["children_total"] > len(d["children"]):
        out.append(f"  ... {d['children_total'] - len(d['children'])} more")
    return out


def _exceptions(d: dict) -> List[str]:
    out = [f"{d['total']} exception(s)"]
    for e in d["exceptions"]:
        caught = f"caught in {e['caught_in']}" if e["caught_in"] else "not caught by recorded code"
        out.append(f"idx {e['idx']} thread {_thread(e)}  {e['exception']}")
        out.append(f"  raised in {e['fn']} at {_where(e)}; unwound {' <- '.join(e['unwound'])}; {caught}")
    return out


def _frequencies(d: dict) -> List[str]:
    out = [f"{d['functions']} function(s) called" + (f" in thread {_thread(d)}" if "thread_id" in d else "")]
    out += [f"{r['calls']:>8}  {r['fn']}" for r in d["frequencies"]]
    return out


def _stack(d: dict) -> List[str]:
    out = [f"stack at idx {d['idx']} thread {_thread(d)} (innermost first):"]
    for f in d["frames"]:
        args = ", ".join(f"{k}={v}" for k, v in f["args"].items())
        out.append(f"  idx {f['idx']}  {f['fn']}({args})  {_where(f)}")
    return out


def _window(d: dict) -> List[str]:
    out = [f"thread {_thread(d)} entries {d['first']}..{d['last']} of {d['entries_in_thread']}"]
    for e in d["entries"]:
        mark = ">" if e["idx"] == d["idx"] else " "
        line = f" L{e['line']}" if e.get("line") is not None else ""
        out.append(f"{mark} {e['idx']:>6} {e['type']:<9}{line}  {e['text']}")
    return out


def _bindings(d: dict) -> List[str]:
    out = [f"locals of {d['fn']} (call idx {d['fn_call_idx']}) at idx {d['idx']} thread {_thread(d)}:"]
    for b in d["bindings"]:
        at = f"  (line {b['line']})" if b["line"] is not None else ""
        state = f"  (as of idx {b['state_idx']})" if b.get("state_idx") is not None else ""
        if b.get("writes_applied"):
            n = b["writes_applied"]
            state = (
                f"  (as of idx {b['state_idx']}: {n} write{'s' if n > 1 else ''} applied to its last recorded state)"
            )
        out.append(f"  {b['symbol']} = {b['value']}{at}{state}")
    return out


def _history(d: dict) -> List[str]:
    where = "all threads, in recorded order" if d["thread_id"] is None else f"thread {d['thread_id']}"
    writes = f" and {d['writes']} write(s)" if d.get("writes") else ""
    out = [f"{d['states']} recorded state(s){writes} of object #{d['obj_id']} in flow {d['flow_id']} ({where}):"]
    for i, h in enumerate(d["history"]):
        if d["left_out"] and i == len(d["history"]) - 1:
            out.append(f"  ... {d['left_out']} row(s) left out (--limit)")
        idx = "?" if h["idx"] is None else h["idx"]
        if h.get("kind") == "write":
            out.append(f"  idx {idx:>6} thread {_thread(h)}  write {h['write']}  -> {h['value']}")
        else:
            out.append(f"  idx {idx:>6} thread {_thread(h)}  {h['value']}")
    return out


def _source(d: dict) -> List[str]:
    out = [f"{d['file']}:{d['line']}  ({d['type']} in {d['fn']}, idx {d['idx']})"]
    if d.get("note"):
        out.append(d["note"])
    return out + d["lines"]


def _search(d: dict) -> List[str]:
    state = "" if d["complete"] else " (stopped early: --limit, or interrupted)"
    out = [f"{d['shown']} hit(s) for {d['text']!r} in {d['entries_searched']} entries{state}"]
    out += [f"idx {h['idx']} thread {_thread(h)}  {h['fn']}  {h['in']}: {h['value']}" for h in d["hits"]]
    return out


def _writes(d: dict) -> List[str]:
    left = f"; {d['left_out']} left out (--limit)" if d["left_out"] else ""
    out = [f"{d['total']} write(s); showing {d['shown']}{left}"]
    if d.get("read_as"):
        out[0] += f" ({d['read_as']})"
    for w in d["writes"]:
        old = w["old"] if w["old"] is not None else w["old_from"]
        if w.get("old_thread_id") not in (None, w["thread_id"]):
            old = f"{old} (written by thread {w['old_thread_name'] or w['old_thread_id']} at idx {w['old_idx']})"
        new = "<deleted>" if w["deleted"] else w["new"]
        target = f"#{w['obj_id']}.{w['name']}" if w["kind"] == "attr" else f"#{w['obj_id']}[{w['name']}]"
        out.append(f"idx {w['idx']} thread {_thread(w)}  {target}: {old} -> {new}  in {w['fn']} at {_where(w)}")
    return out


_RENDER: Dict[str, Callable[[dict], List[str]]] = {
    "summary": _summary,
    "calls": _calls,
    "call": _one_call,
    "exceptions": _exceptions,
    "frequencies": _frequencies,
    "stack": _stack,
    "window": _window,
    "bindings": _bindings,
    "history": _history,
    "source": _source,
    "search": _search,
    "writes": _writes,
    "outputs": outputs_cli.render,
    "origin": _origin,
    "diff": _diff,
    "frames": _frames,
}


def render_text(kind: str, d: dict) -> str:
    """The compact text form of an answer of :mod:`squall.agent`."""
    return "\n".join(_RENDER[kind](d))
