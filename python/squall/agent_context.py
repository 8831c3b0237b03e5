"""What the agent queries share: the context of one question over a recording (`_Ctx`), the
answer budget and its fitting, argument checks, value previews and the one-line form of an entry.
`agent.py` (the queries) and `agent_origin.py` (origin, diff) both build on it, so neither imports
the other."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

from squall import values as _values
from squall.indexes import Queries

ThreadRef = Union[int, str, None]

#: Bounds of value previews: nesting levels, items per container, characters in all.
PRINT_LEVEL = 3
PRINT_LENGTH = 8
MAX_CHARS = 240
#: The most entries ``window`` lists either side of its idx (a cap the answer states).
WINDOW_MAX = 200


class AgentError(ValueError):
    """A question the recording cannot answer as asked (unknown thread, idx out of range...)."""


#: What a list in one answer may take, in bytes of JSON, so that answers stay under 8 KB with
#: their other fields (a list cut to fit says so, ``left_out``/``more``, and how to get the
#: rest). ``squall mcp`` and ``squall query`` keep it (``--max-bytes`` sets it); None: lists are
#: bounded by their ``limit`` only (the Python API's default).
ANSWER_BUDGET: Optional[int] = None
#: The budget ``squall mcp`` and ``squall query`` use.
DEFAULT_BUDGET = 6000


def set_answer_budget(budget: Optional[int]) -> None:
    """Sets :data:`ANSWER_BUDGET` (None or 0: no byte cap)."""
    global ANSWER_BUDGET
    ANSWER_BUDGET = budget or None


def _fit(rows: List[Any], less: int = 0, share: float = 1.0) -> Tuple[List[Any], int]:
    """The first ``rows`` whose JSON fits in the answer's budget (``share`` of it, ``less``
    bytes taken by something else; at least one row), and how many were left out."""
    import json

    if ANSWER_BUDGET is None:
        return rows, 0
    budget = int(ANSWER_BUDGET * share) - less
    used = 0
    for i, row in enumerate(rows):
        used += len(json.dumps(row, ensure_ascii=False)) + 2
        if used > budget and i > 0:
            return rows[:i], len(rows) - i
    return rows, 0


def _count(name: str, value: Any, low: int = 0) -> int:
    """``value`` if it is an int (not a bool) of at least ``low``, else an AgentError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise AgentError(f"{name} must be a whole number >= {low}, not {value!r}")
    return value


# --- values -------------------------------------------------------------------------------------


def _cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"...<{len(text) - max_chars} more chars>"


def preview_ref(
    b: Any,
    ref: Optional[int],
    print_level: int = PRINT_LEVEL,
    print_length: int = PRINT_LENGTH,
    max_chars: int = MAX_CHARS,
) -> str:
    """The value ref ``ref`` of recording ``b`` (an ``_engine.Recording``) names, printed within
    bounds by the core's printer (``val_pprint``'s), long text cut. Never raises."""
    if ref is None:
        return "None"
    try:
        text = b.val_pprint(ref, print_level, print_length)
    except (KeyError, ValueError) as e:
        text = f"<unprintable value: {e}>"
    return _cut(text, max_chars)


def preview(
    value: Any, print_level: int = PRINT_LEVEL, print_length: int = PRINT_LENGTH, max_chars: int = MAX_CHARS
) -> str:
    """A Python value (not a recorded ref: an expression evaluated over recorded values, as the
    DAP server's) printed within the same bounds, long text cut. Never raises. Recorded values
    are printed by :func:`preview_ref`."""
    try:
        text = _values.pformat(value, print_level=print_level, print_length=print_length)
    except BaseException as e:  # noqa: BLE001 - a value's repr may raise anything
        text = f"<unprintable {type(value).__name__}: {type(e).__name__}>"
    return _cut(text, max_chars)


_NOT_SAVED = "<not saved>"  # squall_store::MISSING_VALUE: the type of a value a file did not save
_NOT_SAVED_EXC = "<exception not saved: the recording was cut short before it was written>"


def _exc_text(b: Any, ref: Optional[int], max_chars: int = MAX_CHARS) -> str:
    """The exception a ``throwable_ref`` of recording ``b`` (an ``_engine.Recording``) names, as
    Python's traceback ends with it (``module.Type: message``, the core's
    ``exceptions::exception_text``), long text cut. Never raises."""
    if ref is None:
        return "<exception not recorded>"
    try:
        line = b.exception_text(ref)
    except (KeyError, ValueError) as e:
        return f"<unreadable exception: {e}>"
    if line is None:
        return "<exception not recorded>"
    if line == _NOT_SAVED:
        return _NOT_SAVED_EXC
    return _cut(line, max_chars)


# --- context: forms, flows, threads -------------------------------------------------------------


class _Ctx:
    """Per-answer caches over a Queries object."""

    def __init__(self, q: Queries) -> None:
        self.q = q
        self.b = q._b
        self._forms: Optional[Dict[int, dict]] = None
        self._threads: Dict[int, List[dict]] = {}
        self._sources: Dict[str, Tuple[List[str], Optional[str]]] = {}

    @property
    def forms(self) -> Dict[int, dict]:
        if self._forms is None:
            self._forms = {f["form_id"]: dict(f) for f in self.b.forms()}
        return self._forms

    def flows(self) -> Dict[int, List[int]]:
        return dict(self.b.all_flows())

    def threads(self, fid: int) -> List[dict]:
        if fid not in self._threads:
            self._threads[fid] = list(self.b.flow_threads_info(fid))
        return self._threads[fid]

    def thread_name(self, fid: int, tid: int) -> Optional[str]:
        for t in self.threads(fid):
            if t["thread_id"] == tid:
                return t["thread_name"]
        return None

    def flow(self, flow: Optional[int]) -> int:
        flows = self.flows()
        if not flows:
            cut = self.b.info().get("cut_short") if hasattr(self.b, "info") else None
            raise AgentError(
                "the recording is empty: no flow has any entry"
                + (f" (the file is cut short before any: {cut})" if cut else "")
            )
        if flow is None:
            return 0 if 0 in flows else min(flows)
        if flow not in flows:
            raise AgentError(f"no flow {flow}: the flows are {sorted(flows)}")
        return flow

    def thread(self, fid: int, thread: ThreadRef) -> int:
        threads = self.threads(fid)
        if not threads:
            raise AgentError(f"flow {fid} has no threads")
        if thread is None or thread == "":
            for t in threads:
                if t["thread_name"] == "MainThread":
                    return t["thread_id"]
            return threads[0]["thread_id"]
        if isinstance(thread, str) and thread.strip().isdigit():
            thread = int(thread)
        for t in threads:
            if t["thread_id"] == thread or t["thread_name"] == thread:
                return t["thread_id"]
        known = ", ".join(f"{t['thread_id']} ({t['thread_name']})" for t in threads)
        raise AgentError(f"no thread {thread!r} in flow {fid}: its threads are {known}")

    def where(self, fid: int, tid: int) -> dict:
        return {"flow_id": fid, "thread_id": tid, "thread_name": self.thread_name(fid, tid)}

    def entry(self, fid: int, tid: int, idx: int) -> dict:
        n = self.b.timeline_len(fid, tid)
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise AgentError(f"idx must be a whole number (an entry's idx), not {idx!r}")
        if not 0 <= idx < n:
            raise AgentError(
                f"idx {idx} is out of range: thread {tid} ({self.thread_name(fid, tid)}) of flow {fid} "
                f"has entries 0..{n - 1}; idxs are per thread (pass the thread the idx came from)"
            )
        return self.b.entry(fid, tid, idx)

    def deref(self, ref: Optional[int]) -> Any:
        return None if ref is None else self.b.deref(ref)

    def show(self, ref: Optional[int], **bounds: Any) -> str:
        """The preview of the value ``ref`` names (:func:`preview_ref`)."""
        return preview_ref(self.b, ref, **bounds)

    # -- describing entries --

    def fn(self, e: dict) -> str:
        return f"{e['fn_ns']}.{e['fn_name']}"

    def frame_fn(self, e: dict) -> str:
        f = self.forms.get(e.get("form_id"))
        return f"{f['fn_ns']}.{f['fn_name']}" if f else "?"

    def args(self, call: dict, **bounds: Any) -> Dict[str, str]:
        args = self.b.arg_refs(call["fn_args_ref"])
        if call.get("resumed"):
            return {"sent": self.show(args[0], **bounds)} if args else {}
        names = (self.forms.get(call["form_id"]) or {}).get("params") or []
        out = {}
        for i, a in enumerate(args):
            out[names[i] if i < len(names) else f"arg{i}"] = self.show(a, **bounds)
        return out

    def outcome(self, fid: int, tid: int, call: dict, **bounds: Any) -> dict:
        """What a call did: ``returned`` / ``yielded`` / ``awaited`` (a preview), ``raised``
        (``Type: message``), or ``running`` (no exit recorded); with ``ret_idx``."""
        ret_idx = call.get("ret_idx")
        if ret_idx is None:
            return {"ret_idx": None, "running": True}
        x = self.b.entry(fid, tid, ret_idx)
        if x["type"] == "fn-unwind":
            return {"ret_idx": ret_idx, "raised": _exc_text(self.b, x["throwable_ref"])}
        kind = x.get("kind", "return")
        key = {"yield": "yielded", "await": "awaited"}.get(kind, "returned")
        return {"ret_idx": ret_idx, key: self.show(x["result_ref"], **bounds)}

    def call_brief(self, fid: int, tid: int, call: dict, **bounds: Any) -> dict:
        out = {"idx": call["idx"], "fn": self.fn(call), "args": self.args(call, **bounds)}
        if call.get("resumed"):
            out["resumed"] = True
        out.update(self.outcome(fid, tid, call, **bounds))
        return out

    def source_file(self, path: str) -> Tuple[List[str], Optional[str]]:
        """The lines of a source file of the recording, and a note (it cannot be verified) or the
        reason it is not shown (changed since recorded, refused): the engine's rules for reading
        files a recording names."""
        if path not in self._sources:
            try:
                text, _verified, note = self.b.read_source(path)
                self._sources[path] = (text.splitlines(), note)
            except ValueError as e:
                self._sources[path] = ([], str(e))
        return self._sources[path]

    def source_text(self, form_id: Any, coord: Any, max_chars: int = 60) -> Optional[str]:
        """The source text a coord spans (one line's worth, cut), or None."""
        f = self.forms.get(form_id)
        if not f or not coord or not f.get("file"):
            return None
        line, col, end_line, end_col = coord
        lines = self.source_file(f["file"])[0]
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if not text:
            return None
        text = text[col:end_col] if end_line == line else text[col:].rstrip() + " ..."
        return _cut(" ".join(text.split()), max_chars)

    def line_of(self, fid: int, tid: int, e: dict) -> Optional[int]:
        if e.get("coord"):
            return e["coord"][0]
        if e["type"] in ("fn-call", "fn-resume"):
            f = self.forms.get(e["form_id"])
            return f["line"] if f else None
        return None


def _bounds(print_level: int, print_length: int) -> dict:
    return {"print_level": print_level, "print_length": print_length}


# --- answers ------------------------------------------------------------------------------------


def _entry_line(c: _Ctx, fid: int, tid: int, e: dict, bounds: dict) -> dict:
    t = e["type"]
    row: Dict[str, Any] = {"idx": e["idx"], "type": t}
    if t in ("fn-call", "fn-resume"):
        row["fn"] = c.fn(e)
        args = c.args(e, **bounds)
        row["text"] = (
            f"{'resume' if t == 'fn-resume' else 'call'} {c.fn(e)}("
            + ", ".join(f"{k}={v}" for k, v in args.items())
            + ")"
        )
        return row
    row["fn"] = c.frame_fn(e)
    line = c.line_of(fid, tid, e)
    if line is not None:
        row["line"] = line
    if t == "fn-return":
        kind = e.get("kind", "return")
        row["text"] = f"{kind} {row['fn']} -> {c.show(e['result_ref'], **bounds)}"
    elif t == "fn-unwind":
        row["text"] = f"unwind {row['fn']} !! {_exc_text(c.b, e['throwable_ref'])}"
    elif t == "expr":
        src = c.source_text(e["form_id"], e.get("coord")) or "?"
        row["text"] = f"`{src}` = {c.show(e['result_ref'], **bounds)}"
    elif t == "bind":
        row["text"] = f"{e['symbol']} := {c.show(e['value_ref'], **bounds)}"
    else:
        row["text"] = t
    return row
