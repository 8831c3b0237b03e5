"""`squall mcp REC`: a Model Context Protocol server over stdio that answers an AI agent's
questions about one recording. Each tool is one answer of :mod:`squall.agent`: compact JSON,
values as bounded previews, every call, frame and entry named by its flow, thread and ``idx`` so
the agent can drill down.

Needs the official ``mcp`` SDK (``pip install 'squall[mcp]'``). stdout carries the protocol only:
anything else a tool might print goes to stderr.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import threading
import traceback
from typing import Any, Callable, Optional, Union

Thread = Union[int, str, None]

INSTRUCTIONS = """\
This server answers questions about one squall recording of a Python program: every call, return,
exception, local binding and expression value, per thread, in order. Start with `summary` (flows,
threads, most called functions, exceptions). Then `calls` of a suspicious function, `exceptions`
(where raised, frames unwound, where caught), and drill down with the `idx` and `thread` every
answer carries: `call` (args, result or exception, parent, children), `stack`, `bindings` (locals
at that moment), `window` (the timeline around an idx), `source` (the code it ran), `search`
(values containing a text). An idx is per thread: always pass the thread it came from (id or
name). Values are previews cut to a few hundred characters."""


def _server_class() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer  # mcp >= 2

        return MCPServer
    except ImportError:
        from mcp.server.fastmcp import FastMCP  # mcp 1.x

        return FastMCP


def _tool_error() -> type:
    try:
        from mcp.server.mcpserver.exceptions import ToolError  # mcp >= 2
    except ImportError:
        try:
            from mcp.server.fastmcp.exceptions import ToolError  # mcp 1.x
        except ImportError:
            return ValueError
    return ToolError


def build_server(rec: Any) -> Any:
    """The MCP server for a loaded recording (``squall.load(path)``), tools registered."""
    from squall import agent

    server = _server_class()("squall", instructions=INSTRUCTIONS)
    tool_error = _tool_error()
    lock = threading.Lock()  # one question at a time: tools may run on worker threads

    def tool(fn: Callable[..., dict]) -> Callable[..., str]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> str:
            # Nothing but protocol on stdout: stray prints go to stderr.
            with lock, contextlib.redirect_stdout(sys.stderr):
                try:
                    result = fn(*args, **kwargs)
                except agent.AgentError as e:
                    raise tool_error(str(e)) from None
                except Exception as e:  # noqa: BLE001 - a squall bug: the agent gets the reason, stderr the trace
                    traceback.print_exc(file=sys.stderr)
                    raise tool_error(f"squall failed to answer `{fn.__name__}` ({type(e).__name__}: {e}); "
                                     "this is a bug in squall: please report it") from None
            return json.dumps(result, ensure_ascii=False)

        run.__annotations__["return"] = str

        description = " ".join((fn.__doc__ or "").split())
        try:  # JSON text only: no duplicate structured copy of every answer
            server.tool(description=description, structured_output=False)(run)
        except TypeError:  # an SDK without structured output
            server.tool(description=description)(run)
        return run

    @tool
    def summary() -> dict:
        """What the recording holds: program, completed or cut short, flows and threads (ids and
        names) with entry and call counts, the most called functions, and the exceptions (idx,
        thread, type and message, function, where caught). Call this first."""
        return agent.summary(rec)

    @tool
    def calls(fn: str, ns: Optional[str] = None, thread: Thread = None, flow: Optional[int] = None,
              limit: int = 10, offset: int = 0) -> dict:
        """The recorded calls of a function, in order: each with thread, idx, argument previews by
        parameter name, and what it returned (`returned`), yielded or raised (`raised`). `fn` is a
        name (`process_invoice`), `Class.method`, or `module.qualname`; `ns` narrows to a module;
        `thread` (id or name) narrows to one thread; `offset`/`limit` page through (`total` says
        how many there are)."""
        return agent.calls(rec, fn, ns=ns, flow=flow, thread=thread, limit=limit, offset=offset)

    @tool
    def call(idx: int, thread: Thread = None, flow: Optional[int] = None, max_children: int = 20) -> dict:
        """One call in full: function, file and line of its def, arguments, what it returned or
        raised (with the exit idx), its parent call and its children (the calls it made, each with
        args and outcome). `idx` is the call's idx (any entry of the frame works) in `thread` (id
        or name; default MainThread)."""
        return agent.call(rec, idx, flow=flow, thread=thread, max_children=max_children)

    @tool
    def exceptions(thread: Thread = None, flow: Optional[int] = None, limit: int = 20) -> dict:
        """Every exception that left a recorded function, once each: the fn-unwind idx and thread,
        type and message, the function, file and line it was raised at, the frames it unwound
        (innermost first), and whether and where a recorded caller caught it."""
        return agent.exceptions(rec, flow=flow, thread=thread, limit=limit)

    @tool
    def writes(name: Optional[str] = None, type_name: Optional[str] = None, obj_id: Optional[int] = None,
               thread: Thread = None, flow: Optional[int] = None, limit: int = 20) -> dict:
        """Where an attribute or item was changed (writes in instrumented code), oldest first: by
        attribute `name` (or key), of objects of recorded `type_name` (e.g. "Item") and/or the
        object `obj_id`. Each: idx, thread, function, file and line, `old` (with `old_from`:
        "previous write", "recorded state", "unknown (not recorded before)" or "unknown (not saved:
        the recording was cut short)") and `new`. At most
        `limit`; `left_out` says how many more there are."""
        return agent.writes(rec, name, type_name=type_name, obj_id=obj_id, flow=flow, thread=thread, limit=limit)

    @tool
    def stack(idx: int, thread: Thread = None, flow: Optional[int] = None) -> dict:
        """The call stack at an idx, innermost frame first: each frame's call idx, function, file,
        def line and argument previews."""
        return agent.stack(rec, idx, flow=flow, thread=thread)

    @tool
    def frequencies(thread: Thread = None, flow: Optional[int] = None, limit: int = 30) -> dict:
        """How many times each recorded function was called, most called first (all threads of the
        flow, or one `thread`)."""
        return agent.frequencies(rec, flow=flow, thread=thread, limit=limit)

    @tool
    def search(text: str, thread: Thread = None, flow: Optional[int] = None, limit: int = 20) -> dict:
        """Recorded values whose preview contains `text` (case-insensitive): call arguments,
        return values, exceptions, local bindings and expression values, in timeline order, each
        with thread, idx, where it was (`args`, `return`, `raise`, `bind NAME`, `expr SOURCE`) and
        the function. Stops at `limit` hits or after 20 seconds (`complete` says which)."""
        return agent.search(rec, text, flow=flow, thread=thread, limit=limit, max_seconds=20)

    @tool
    def window(idx: int, thread: Thread = None, flow: Optional[int] = None, before: int = 10,
               after: int = 10) -> dict:
        """The timeline around an idx (at most 200 entries either side): one line per entry: calls
        with args, returns with values, expressions with their source text and value, bindings,
        unwinds."""
        return agent.window(rec, idx, flow=flow, thread=thread, before=before, after=after)

    @tool
    def source(idx: int, thread: Thread = None, flow: Optional[int] = None, context: int = 3) -> dict:
        """The source code of what an idx recorded: file, line, and the lines around it with line
        numbers, the entry's own lines marked `>` (a call: its def line; an unwind: the line it
        raised from)."""
        return agent.source(rec, idx, flow=flow, thread=thread, context=context)

    @tool
    def bindings(idx: int, thread: Thread = None, flow: Optional[int] = None) -> dict:
        """The local variables of the frame at an idx as they were at that moment: parameters,
        then each name's latest binding up to idx, with value previews and the line that bound it."""
        return agent.bindings(rec, idx, flow=flow, thread=thread)

    @tool
    def history(obj_id: int, thread: Thread = None, flow: Optional[int] = None, limit: int = 50) -> dict:
        """Every recorded state of one object (obj_id: the N of `#N` in a value preview), oldest
        first, each with the thread and idx that first recorded it and its preview, and the writes
        to it in between (kind "write": `write` says what was written, `value` is the object as
        of that write); all threads merged in recorded order unless `thread` is given. At most
        `limit` rows (the first limit-1 and the last): `states` and `writes` say how many there
        are, `left_out` how many rows are not shown."""
        return agent.history(rec, obj_id, flow=flow, thread=thread, limit=min(max(limit, 1), 200))

    return server


def main(path: str) -> int:
    """Loads the recording and serves it over stdio until the client disconnects. A recording
    that cannot be loaded is reported first, whether or not the MCP SDK is installed."""
    from squall.files_cli import load

    rec = load(path, prog="squall mcp", progress=False)
    if rec is None:
        return 1
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("squall mcp: the MCP SDK is not installed: pip install 'squall[mcp]' (or pip install mcp)",
              file=sys.stderr)
        return 1
    server = build_server(rec)
    try:
        server.run("stdio") if _takes_transport(server) else server.run()
    except KeyboardInterrupt:
        pass
    return 0


def _takes_transport(server: Any) -> bool:
    import inspect

    try:
        return "transport" in inspect.signature(server.run).parameters
    except (TypeError, ValueError):
        return False
