"""What the editor shows at a stop: stackTrace, scopes, variables, evaluate, exceptionInfo.

Everything is read from the recording: the call stack at the thread's entry
(``stack_for_frame``), a frame's locals as they were there (``bindings``: each name's newest
binding at or before that entry, objects in their newest state recorded by then). Variables are
the recorded values' trees as the core opens them (``Recording.val_expand``,
``squall_trace::value_tree``: the UI's value inspector pages the same children under the same
keys), printed by the core's printer (``val_pprint``'s). Only evaluated expressions are Python
values (the recorded locals as ``deref_val_id`` gives them, builtins as themselves, other objects
as ``ObjectSnapshot``), paged here. The program is never run again, so no ``__repr__`` or
property of it runs either."""

from __future__ import annotations

import builtins
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from squall import agent, values
from squall.agent_context import _cut
from squall.dap.lifecycle import source_of
from squall.dap.navigation import Nav
from squall.dap.session import DapError, Session, Thread, request

PREVIEW_CHARS = 400


class Frame:
    """A frame of a stack shown to the editor: where it is (``idx``: the entry whose locals it
    shows) and what it shows (``loc_idx``: the entry whose line it shows)."""

    def __init__(self, t: Thread, call_idx: int, idx: int, loc_idx: int, top: bool) -> None:
        self.t = t
        self.call_idx = call_idx
        self.idx = idx
        self.loc_idx = loc_idx
        self.top = top
        self.line: Optional[int] = None


def frames_at(s: Session, t: Thread, start: int = 0, levels: int = 0) -> Tuple[List[Frame], int]:
    """The recorded call stack at the thread's entry (``stack_for_frame``), innermost first:
    ``levels`` frames (0: all) from ``start``, and how many there are."""
    nav = Nav(s, t)
    calls = [c["fn_call_idx"] for c in s.rec.stack_for_frame(t.flow_id, t.thread_id, t.idx)]
    out = []
    for k in range(start, len(calls) if levels <= 0 else min(len(calls), start + levels)):
        if k == 0:
            out.append(Frame(t, calls[0], t.idx, t.idx, True))
            continue
        parent, call = calls[k], calls[k - 1]
        # Where the caller was: its last entry before the call (its locals there).
        before = nav.before(call, parent)
        at = before if before is not None else parent
        f = Frame(t, parent, at, at, False)
        f.line = nav.call_line(nav.entry(call), at)
        out.append(f)
    return out, len(calls)


def _frame_ref(s: Session, f: Frame) -> int:
    fid = len(s.frames) + 1
    s.frames[fid] = f
    return fid


def frame(s: Session, frame_id: Any) -> Frame:
    f = s.frames.get(frame_id)
    if f is None:
        raise DapError(f"no frame {frame_id!r}: the thread moved since the stack was shown; ask again")
    return f


@request("stackTrace")
def stack_trace(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    t = s.thread(args)
    nav = Nav(s, t)
    start = max(int(args.get("startFrame") or 0), 0)
    levels = int(args.get("levels") or 0)
    shown, total = frames_at(s, t, start, levels)
    out = []
    for f in shown:
        e = nav.entry(f.loc_idx)
        call = nav.entry(f.call_idx)
        file, line = nav.loc(e)
        moved = f.line is not None and f.line != line
        line = f.line or line
        item: Dict[str, Any] = {
            "id": _frame_ref(s, f),
            "name": call["fn_name"] or "<module>",
            "source": source_of(file),
            "line": line,
            "column": 1,
            "instructionPointerReference": str(f.idx),
        }
        coord = e.get("coord")
        if coord and coord[0] == line and not moved:
            item["column"] = coord[1] + 1
            item["endLine"] = coord[2]
            item["endColumn"] = coord[3] + 1
        out.append(item)
    return {"stackFrames": out, "totalFrames": total}


@request("scopes")
def scopes(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    f = frame(s, args.get("frameId"))
    out = [
        {
            "name": "Locals",
            "presentationHint": "locals",
            "variablesReference": s.handle(("locals", f)),
            "expensive": False,
        }
    ]
    if f.top:
        e = Nav(s, f.t).entry(f.idx)
        label = {
            "expr": "Value of this expression",
            "fn-return": "Return value",
            "fn-unwind": "Exception",
            "bind": "Bound value",
        }.get(e["type"])
        if label is not None:
            out.append({"name": label, "variablesReference": s.handle(("entry", e)), "expensive": False})
    return {"scopes": out}


def frame_local_refs(s: Session, f: Frame) -> List[Tuple[str, Optional[int]]]:
    """``(name, value ref)`` of each local of the frame at its entry, as recorded."""
    return [(b["symbol"], b["value_ref"]) for b in s.rec.bindings(f.t.flow_id, f.t.thread_id, f.idx)]


def frame_locals(s: Session, f: Frame) -> List[Tuple[str, Any]]:
    """``(name, value)`` of each local of the frame at its entry, as Python values (what
    expressions are evaluated over)."""
    return [(name, s.rec.deref_val_id(ref)) for name, ref in frame_local_refs(s, f)]


def entry_value(e: Dict[str, Any]) -> List[Tuple[str, Optional[int]]]:
    """``(name, value ref)`` of what the entry recorded."""
    if e["type"] == "fn-return":
        return [("return", e["result_ref"])]
    if e["type"] == "fn-unwind":
        return [("exception", e["throwable_ref"])]
    if e["type"] == "bind":
        return [(e["symbol"], e["value_ref"])]
    return [("value", e.get("result_ref"))]


@request("restartFrame")
def restart_frame(s: Session, args: Dict[str, Any]) -> None:
    """Back to where the frame started (its call entry): nothing is run again."""
    f = frame(s, args.get("frameId"))
    f.t.idx = f.call_idx
    s.stopped(f.t, "restart", f"the start of this call (entry {f.call_idx})")


# --- values as variables -----------------------------------------------------------------------

#: The bounds a variable's value is printed within (the core's printer).
PRINT_LEVEL = 2
PRINT_LENGTH = 10


def _node(
    s: Session, ref: Optional[int], path: Sequence[int] = (), offset: int = 0, limit: Optional[int] = 0
) -> Dict[str, Any]:
    """The node ``path`` names in the value ``ref`` names, with children ``offset..offset +
    limit`` (None: all), as the core opens it (``val_expand``); ``None`` ref: no value recorded."""
    if ref is None:
        return {"type": "NoneType", "repr": "None", "children_total": 0, "indexed": False, "children": []}
    return s.rec.val_expand(ref, path, offset, limit, PRINT_LEVEL, PRINT_LENGTH)


def _ref_variable(
    s: Session, name: str, ref: Optional[int], node: Dict[str, Any], path: Sequence[int], evaluate_name: Optional[str]
) -> Dict[str, Any]:
    """The DAP variable of a node of a recorded value: its text and type as the core gives them;
    children, if it has any, behind a handle that pages them from the core."""
    value = _cut(node["repr"], PREVIEW_CHARS)
    if node.get("earlier_idx") is not None:
        # Not recorded at this moment: the entry the state shown is as of.
        value = f"{value}  [as of entry {node['earlier_idx']}]"
    out: Dict[str, Any] = {
        "name": name,
        "value": value,
        "type": node["type"],
        "variablesReference": 0,
    }
    if evaluate_name:
        out["evaluateName"] = evaluate_name
    if node["children_total"]:
        out["variablesReference"] = s.handle(("ref", ref, list(path), node["type"], evaluate_name))
        out["indexedVariables" if node["indexed"] else "namedVariables"] = node["children_total"]
    return out


def ref_variable(s: Session, name: str, ref: Optional[int], evaluate_name: Optional[str] = None) -> Dict[str, Any]:
    """The DAP variable of the value ``ref`` names."""
    return _ref_variable(s, name, ref, _node(s, ref), (), evaluate_name)


_UNORDERED = ("set", "frozenset")


def _child_name(parent_type: str, c: Dict[str, Any]) -> Tuple[str, Optional[str]]:
    """A child's name in the Variables view and what to append to its parent's evaluate name to
    reach it (None: no expression does)."""
    key = c["key"]
    if c["key_kind"] == "attr":
        return key, f".{key}" if key.isidentifier() else None
    if c["key_kind"] == "key":
        return key, f"[{key}]" if c["key_exact"] else None
    if parent_type in _UNORDERED:
        return f"<{key}>", None
    return f"[{key}]", f"[{key}]"


def ref_children(
    s: Session,
    ref: Optional[int],
    path: Sequence[int],
    parent_type: str,
    evaluate_name: Optional[str],
    start: int,
    count: int,
) -> List[Dict[str, Any]]:
    """A page of the children of a recorded value's node, as the core pages them."""
    node = _node(s, ref, path, start, count if count > 0 else None)
    out = []
    for c in node["children"]:
        name, suffix = _child_name(parent_type, c)
        evaluate = evaluate_name + suffix if evaluate_name and suffix else None
        out.append(_ref_variable(s, name, ref, c, c["path"], evaluate))
    return out


def _type_name(v: Any) -> str:
    name = getattr(v, "type_name", None)
    if isinstance(name, str) and not isinstance(v, (str, bytes)):
        return name
    return type(v).__name__


def _children(v: Any) -> Optional[Tuple[str, int, Callable[[int, int], List[Tuple[str, Any, str]]]]]:
    """``(kind, count, page)`` of an evaluated Python value with children, ``page(start,
    count)`` giving ``(name, value, evaluate suffix)``; None for a leaf."""
    if isinstance(v, values.Earlier):
        return _children(v.value)
    if isinstance(v, (str, bytes, values.Truncated)) or v is None:
        return None
    if isinstance(v, dict):
        items = list(v.items())
        return (
            "named",
            len(items),
            lambda a, n: [(agent.preview(k, 1, 4, 80), val, f"[{k!r}]") for k, val in items[a : a + n]],
        )
    if isinstance(v, (list, tuple)):
        seq = v
        return "indexed", len(seq), lambda a, n: [(f"[{i}]", seq[i], f"[{i}]") for i in range(a, min(a + n, len(seq)))]
    if isinstance(v, (set, frozenset)):
        seq = list(v)
        return "indexed", len(seq), lambda a, n: [(f"<{i}>", seq[i], "") for i in range(a, min(a + n, len(seq)))]
    if isinstance(v, values.ObjectSnapshot):
        attrs = list(v.attrs.items())
        if not attrs:
            return None
        return "named", len(attrs), lambda a, n: [(str(k), val, f".{k}") for k, val in attrs[a : a + n]]
    return None


def variable(s: Session, name: str, v: Any, evaluate_name: Optional[str] = None) -> Dict[str, Any]:
    """The DAP variable of an evaluated Python value (not a recorded ref)."""
    out: Dict[str, Any] = {
        "name": name,
        "value": agent.preview(v, PRINT_LEVEL, PRINT_LENGTH, PREVIEW_CHARS),
        "type": _type_name(v),
        "variablesReference": 0,
    }
    if evaluate_name:
        out["evaluateName"] = evaluate_name
    kids = _children(v)
    if kids is not None:
        kind, count, _ = kids
        out["variablesReference"] = s.handle(("value", v, evaluate_name))
        out["indexedVariables" if kind == "indexed" else "namedVariables"] = count
    return out


@request("variables")
def variables(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    h = s.lookup(args.get("variablesReference"))
    start = max(int(args.get("start") or 0), 0)
    count = int(args.get("count") or 0)
    if h[0] == "locals":
        pairs = frame_local_refs(s, h[1])
        pairs = pairs[start : start + count] if count > 0 else pairs[start:]
        return {"variables": [ref_variable(s, n, ref, n) for n, ref in pairs]}
    if h[0] == "entry":
        return {"variables": [ref_variable(s, n, ref) for n, ref in entry_value(h[1])]}
    if h[0] == "ref":
        _, ref, path, parent_type, evaluate_name = h
        return {"variables": ref_children(s, ref, path, parent_type, evaluate_name, start, count)}
    _, v, evaluate_name = h
    kids = _children(v)
    if kids is None:
        return {"variables": []}
    _, total, page = kids
    n = count if count > 0 else total
    return {
        "variables": [
            variable(s, name, val, (evaluate_name + suffix) if evaluate_name and suffix else None)
            for name, val, suffix in page(start, n)
        ]
    }


# --- evaluate ----------------------------------------------------------------------------------


def evaluate_at(s: Session, f: Frame, expression: str) -> Any:
    """``expression`` evaluated over the frame's recorded locals (and builtins); raises
    :class:`DapError` saying what went wrong."""
    ns = dict(frame_locals(s, f))
    try:
        code = compile(expression, "<squall evaluate>", "eval")
    except SyntaxError as e:
        raise DapError(f"`{expression}` is not a Python expression: {e.msg}") from None
    try:
        return eval(code, {"__builtins__": builtins.__dict__}, ns)
    except Exception as e:  # noqa: BLE001 - the user's expression may raise anything
        raise DapError(f"`{expression}` over the recorded values raised {type(e).__name__}: {e}") from None


@request("evaluate")
def evaluate(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    expression = args.get("expression")
    if not isinstance(expression, str) or not expression.strip():
        raise DapError("evaluate needs an expression")
    if args.get("frameId") is not None:
        f = frame(s, args["frameId"])
    else:
        t = s.thread({})
        f = frames_at(s, t, 0, 1)[0][0]
    refs = dict(frame_local_refs(s, f))
    if expression.strip() in refs:
        # A local by name (a hover, mostly): its recorded value as the Variables view shows it.
        out = ref_variable(s, expression, refs[expression.strip()], expression)
    else:
        out = variable(s, expression, evaluate_at(s, f, expression), expression)
    return {
        "result": out["value"],
        "type": out["type"],
        "variablesReference": out["variablesReference"],
        **{k: out[k] for k in ("indexedVariables", "namedVariables") if k in out},
    }


# --- exceptions ------------------------------------------------------------------------------


@request("exceptionInfo")
def exception_info(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    t = s.thread(args)
    exc = s.breakpoints.exception_at(t, t.idx)
    if exc is None:
        raise DapError(
            f"no exception at entry {t.idx} of thread {t.name!r}: step to one (an exception breakpoint stops there)"
        )
    recorded_type = _node(s, exc["throwable_ref"])["type"]
    nav = Nav(s, t)
    stack = []
    for f in frames_at(s, t)[0]:
        e = nav.entry(f.loc_idx)
        call = nav.entry(f.call_idx)
        file, line = nav.loc(e)
        line = f.line or line
        stack.append(f'  File "{file}", line {line}, in {call["fn_name"] or "<module>"}')
    return {
        "exceptionId": exc["exc_type"] or "exception",
        "description": exc["message"],
        "breakMode": "unhandled" if not exc["caught"] else "always",
        "details": {
            "message": exc["message"],
            "typeName": exc["exc_type"],
            "fullTypeName": recorded_type,
            "evaluateName": None,
            "stackTrace": "\n".join(reversed(stack)),
        },
    }
