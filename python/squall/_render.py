"""A plain-text rendering of a thread's recorded call tree (for tests, the CLI and agents).

One line per recorded call, indented two spaces per nesting level::

    __main__.fib(n=2) -> 1                     a call and what it returned
    __main__.parse(text='x') !! ValueError: no  a call left by an exception
    __main__.gen(n=1) -> yield 1               a generator segment ending at a `yield`
    __main__.gen resumed(5) -> yield 10        the same generator resumed with send(5)
    __main__.main() -> await <coroutine ...>   a coroutine segment ending at an `await`
    __main__.work() -> <no exit recorded>      a call still running (or never left)

Values are printed by the core's printer (``squall_trace::printer::pprint``, the one
``val_pprint`` and the UI's value inspector use) over the recorded refs, within ``print_level`` /
``print_length``; a container the recorder cut keeps its marker visible even when
``print_length`` hides the items before it. An exception the recorder did not keep (a lambda's:
lambdas have no statements to catch it in) shows as ``!! <exception not recorded>``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from squall import _engine
from squall import indexes as _indexes

__all__ = ["render_call_tree", "render_flow"]


def _params_by_form() -> Dict[int, List[str]]:
    return {f["form_id"]: list(f["params"]) for f in _engine.live().forms()}


def _fmt(rec: Any, ref: Optional[int], print_level: Optional[int], print_length: Optional[int]) -> str:
    return "None" if ref is None else rec.val_pprint(ref, print_level, print_length)


def _exc_text(rec: Any, ref: Optional[int]) -> str:
    """The exception as Python's traceback ends with it (``module.Type: message``, the module
    left out for ``__main__`` and builtins): the core's ``exceptions::exception_text``."""
    line = None if ref is None else rec.exception_text(ref)
    return "<exception not recorded>" if line is None else line


def _call_line(
    e: dict,
    flow_id: int,
    thread_id: int,
    params: Dict[int, List[str]],
    print_level: Optional[int],
    print_length: Optional[int],
) -> str:
    rec = _engine.live()
    args = rec.arg_refs(e["fn_args_ref"])
    if e.get("resumed"):
        head = f"{e['fn_ns']}.{e['fn_name']} resumed"
        arg_text = ", ".join(_fmt(rec, a, print_level, print_length) for a in args)
    else:
        head = f"{e['fn_ns']}.{e['fn_name']}"
        names = params.get(e["form_id"], [])
        parts = []
        for i, a in enumerate(args):
            text = _fmt(rec, a, print_level, print_length)
            parts.append(f"{names[i]}={text}" if i < len(names) else text)
        arg_text = ", ".join(parts)
    line = f"{head}({arg_text})"
    ret_idx = e.get("ret_idx")
    if ret_idx is None:
        return f"{line} -> <no exit recorded>"
    x = rec.entry(flow_id, thread_id, ret_idx)
    if x["type"] == "fn-unwind":
        return f"{line} !! {_exc_text(rec, x['throwable_ref'])}"
    result = _fmt(rec, x["result_ref"], print_level, print_length)
    kind = x.get("kind", "return")
    if kind in ("yield", "await"):
        return f"{line} -> {kind} {result}"
    return f"{line} -> {result}"


def render_call_tree(
    flow_id: int, thread_id: int, print_level: Optional[int] = 3, print_length: Optional[int] = 8
) -> str:
    """The call tree of one thread of a flow, one line per call (see the module docstring)."""
    params = _params_by_form()
    lines: List[str] = []
    root = _indexes.callstack_root_node(flow_id, thread_id)
    # Iterative depth-first walk: recorded trees can be deeper than Python's recursion limit.
    stack: List[tuple] = [(c, 0) for c in reversed(_indexes.callstack_node_childs(root))]
    while stack:
        node, depth = stack.pop()
        lines.append("  " * depth + _call_line(node, flow_id, thread_id, params, print_level, print_length))
        stack.extend((c, depth + 1) for c in reversed(_indexes.callstack_node_childs(node)))
    return "\n".join(lines)


def render_flow(flow_id: int = 0, print_level: Optional[int] = 3, print_length: Optional[int] = 8) -> str:
    """Every thread of a flow, sorted by thread name (then by content), each under a
    ``thread <name>:`` header with its call tree indented below."""
    blocks = []
    for info in _indexes.flow_threads_info(flow_id):
        tree = render_call_tree(flow_id, info["thread_id"], print_level, print_length)
        body = "\n".join("  " + ln for ln in tree.splitlines()) if tree else "  <no calls>"
        blocks.append((str(info.get("thread_name")), body))
    blocks.sort()
    return "\n".join(f"thread {name}:\n{body}" for name, body in blocks) + "\n"
