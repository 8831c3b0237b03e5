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

try:  # pydantic comes with the mcp SDK: constraints go into each tool's input schema
    from typing import Annotated

    from pydantic import Field

    Idx = Annotated[int, Field(strict=True, ge=0, description="an entry's idx in its thread")]
    Count = Annotated[int, Field(strict=True, ge=0)]
    Text = Annotated[str, Field(min_length=1)]
    Thread = Union[Annotated[int, Field(strict=True, ge=0)], str, None]  # type: ignore[misc]
except ImportError:  # no SDK (main() says so): plain types, the agent checks the values
    Idx = Count = int  # type: ignore[misc]
    Text = str  # type: ignore[misc]

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
            return _json_text(result)

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
    def calls(fn: str, ns: Optional[str] = None, thread: Thread = None, flow: Optional[Count] = None,
              limit: Count = 10, offset: Count = 0) -> dict:
        """The recorded calls of a function, in order: each with thread, idx, argument previews by
        parameter name, and what it returned (`returned`), yielded or raised (`raised`). `fn` is a
        name (`process_invoice`), `Class.method`, or `module.qualname`; `ns` narrows to a module;
        `thread` (id or name) narrows to one thread; `offset`/`limit` page through (`total` says
        how many there are)."""
        return agent.calls(rec, fn, ns=ns, flow=flow, thread=thread, limit=limit, offset=offset)

    @tool
    def call(idx: Idx, thread: Thread = None, flow: Optional[Count] = None, max_children: Count = 20) -> dict:
        """One call in full: function, file and line of its def, arguments, what it returned or
        raised (with the exit idx), its parent call and its children (the calls it made, each with
        args and outcome). `idx` is the call's idx (any entry of the frame works) in `thread` (id
        or name; default MainThread)."""
        return agent.call(rec, idx, flow=flow, thread=thread, max_children=max_children)

    @tool
    def exceptions(thread: Thread = None, flow: Optional[Count] = None, limit: Count = 20) -> dict:
        """Every exception that left a recorded function, once each: the fn-unwind idx and thread,
        type and message, the function, file and line it was raised at, the frames it unwound
        (innermost first), and whether and where a recorded caller caught it."""
        return agent.exceptions(rec, flow=flow, thread=thread, limit=limit)

    @tool
    def writes(name: Optional[str] = None, type_name: Optional[str] = None, obj_id: Optional[Count] = None,
               thread: Thread = None, flow: Optional[Count] = None, limit: Count = 20) -> dict:
        """Where an attribute or item was changed (writes in instrumented code), oldest first: by
        attribute `name` (or key), of objects of recorded `type_name` (e.g. "Item") and/or the
        object `obj_id`. Each: idx, thread, function, file and line, `old` (with `old_from`:
        "previous write", "recorded state", "unknown (not recorded before)" or "unknown (not saved:
        the recording was cut short)") and `new`. At most
        `limit`; `left_out` says how many more there are."""
        return agent.writes(rec, name, type_name=type_name, obj_id=obj_id, flow=flow, thread=thread, limit=limit)

    @tool
    def stack(idx: Idx, thread: Thread = None, flow: Optional[Count] = None) -> dict:
        """The call stack at an idx, innermost frame first: each frame's call idx, function, file,
        def line and argument previews."""
        return agent.stack(rec, idx, flow=flow, thread=thread)

    @tool
    def frequencies(thread: Thread = None, flow: Optional[Count] = None, limit: Count = 30) -> dict:
        """How many times each recorded function was called, most called first (all threads of the
        flow, or one `thread`)."""
        return agent.frequencies(rec, flow=flow, thread=thread, limit=limit)

    @tool
    def search(text: Text, thread: Thread = None, flow: Optional[Count] = None, limit: Count = 20) -> dict:
        """Recorded values whose preview contains `text` (case-insensitive): call arguments,
        return values, exceptions, local bindings and expression values, in timeline order, each
        with thread, idx, where it was (`args`, `return`, `raise`, `bind NAME`, `expr SOURCE`) and
        the function. Stops at `limit` hits or after 20 seconds (`complete` says which)."""
        return agent.search(rec, text, flow=flow, thread=thread, limit=limit, max_seconds=20)

    @tool
    def window(idx: Idx, thread: Thread = None, flow: Optional[Count] = None, before: Count = 10,
               after: Count = 10) -> dict:
        """The timeline around an idx (at most 200 entries either side): one line per entry: calls
        with args, returns with values, expressions with their source text and value, bindings,
        unwinds."""
        return agent.window(rec, idx, flow=flow, thread=thread, before=before, after=after)

    @tool
    def source(idx: Idx, thread: Thread = None, flow: Optional[Count] = None, context: Count = 3) -> dict:
        """The source code of what an idx recorded: file, line, and the lines around it with line
        numbers, the entry's own lines marked `>` (a call: its def line; an unwind: the line it
        raised from)."""
        return agent.source(rec, idx, flow=flow, thread=thread, context=context)

    @tool
    def bindings(idx: Idx, thread: Thread = None, flow: Optional[Count] = None) -> dict:
        """The local variables of the frame at an idx as they were at that moment: parameters,
        then each name's latest binding up to idx, with value previews and the line that bound it."""
        return agent.bindings(rec, idx, flow=flow, thread=thread)

    @tool
    def history(obj_id: Count, thread: Thread = None, flow: Optional[Count] = None, limit: Count = 50) -> dict:
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
        serve_stdio(server)
    except KeyboardInterrupt:
        pass
    return 0


def _json_text(obj: Any) -> str:
    """JSON text of an answer. Recorded strings may hold lone surrogates (not encodable as UTF-8):
    then every non-ASCII character is escaped, which JSON reads back the same."""
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj)
    return text


# JSON-RPC 2.0 error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _has_lone_surrogate(obj: Any) -> bool:
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(obj, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_has_lone_surrogate(v) for v in obj)
    return False


def _valid_id(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


def check_message(line: bytes) -> Optional[dict]:
    """None if ``line`` is a JSON-RPC 2.0 message MCP can take, else the JSON-RPC error response
    to send back for it (-32700 parse error, -32600 invalid request; ``id`` null when the message
    has no usable id). The SDK's stdio transport drops such lines without a word, leaving the
    client waiting for an answer that never comes."""

    def error(code: int, message: str, msg_id: Any = None) -> dict:
        return {"jsonrpc": "2.0", "id": msg_id if _valid_id(msg_id) else None,
                "error": {"code": code, "message": message}}

    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return error(PARSE_ERROR, f"Parse error: the message is not UTF-8 ({e})")
    try:
        msg = json.loads(text)
    except ValueError as e:
        return error(PARSE_ERROR, f"Parse error: not JSON ({e}): {text.strip()[:80]!r}")
    if isinstance(msg, list):
        return error(INVALID_REQUEST, "Invalid Request: batches (JSON arrays) are not supported by MCP; "
                                      "send one message per line")
    if not isinstance(msg, dict):
        return error(INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {text.strip()[:80]!r}")
    msg_id = msg.get("id")
    if "id" in msg and not _valid_id(msg_id):
        return error(INVALID_REQUEST, f"Invalid Request: id must be a string or an integer, not {msg_id!r}")
    if msg.get("jsonrpc") != "2.0":
        return error(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', msg_id)
    if _has_lone_surrogate(msg):
        return error(INVALID_REQUEST, "Invalid Request: the message holds a lone surrogate escape (like \\ud800): "
                                      "not Unicode text; send characters outside the BMP as surrogate pairs", msg_id)
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return error(INVALID_REQUEST, f"Invalid Request: method must be a string, not {msg['method']!r}", msg_id)
        if "params" in msg and not isinstance(msg["params"], dict):
            return error(INVALID_REQUEST, f"Invalid Request: params must be an object, not {msg['params']!r}", msg_id)
    elif "id" not in msg or ("result" in msg) == ("error" in msg):
        return error(INVALID_REQUEST, "Invalid Request: neither a request (method) nor a response (id and one of "
                                      "result or error)", msg_id)
    sdk_error = _sdk_rejects(text)
    if sdk_error:
        return error(INVALID_REQUEST, f"Invalid Request: {sdk_error}", msg_id)
    return None


def _sdk_rejects(text: str) -> Optional[str]:
    """What the SDK's own message model says is wrong with ``text`` (None: it takes it)."""
    try:
        from mcp_types import jsonrpc_message_adapter  # mcp >= 2

        validate = functools.partial(jsonrpc_message_adapter.validate_json, by_name=False)
    except ImportError:
        try:
            from mcp.types import JSONRPCMessage  # mcp 1.x

            validate = JSONRPCMessage.model_validate_json
        except ImportError:
            return None
    try:
        validate(text)
    except Exception as e:  # noqa: BLE001 - pydantic's ValidationError: its text is the reason
        return " ".join(str(e).split())[:300]
    return None


class _Wire:
    """The protocol's stdout: whole lines, one writer at a time (the SDK's answers and the error
    replies to malformed lines)."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.lock = threading.Lock()

    def _write(self, text: str) -> None:
        # Lone surrogates cannot reach here as raw text from JSON we made (escaped); should the
        # SDK's JSON carry one, its \\uXXXX escape is what JSON means by it.
        data = text.encode("utf-8", "backslashreplace")
        with self.lock:
            self.out.write(data)
            self.out.flush()

    async def write(self, text: str) -> None:
        import anyio

        await anyio.to_thread.run_sync(self._write, text)

    async def flush(self) -> None:
        pass

    async def reply(self, obj: dict) -> None:
        await self.write(json.dumps(obj) + "\n")


class _Lines:
    """The protocol's stdin as the SDK reads it (``async for line in ...``): lines that are not a
    JSON-RPC message it can take are answered here with the JSON-RPC error and not passed on."""

    def __init__(self, inp: Any, wire: _Wire) -> None:
        self.inp = inp
        self.wire = wire

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        import anyio

        while True:
            line = await anyio.to_thread.run_sync(self.inp.readline)
            if not line:
                raise StopAsyncIteration
            if not line.strip():
                continue
            err = check_message(line)
            if err is None:
                return line.decode("utf-8")
            await self.wire.reply(err)


def serve_stdio(server: Any) -> None:
    """Serves ``server`` (built by :func:`build_server`) over this process's stdin/stdout until
    stdin closes. While serving, fd 1 points at stderr, so nothing but protocol reaches the wire."""
    import os

    import anyio
    from mcp.server.stdio import stdio_server

    low = getattr(server, "_lowlevel_server", None) or server._mcp_server
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    wire = _Wire(os.fdopen(wire_fd, "wb", buffering=0))

    async def serve() -> None:
        async with stdio_server(stdin=_Lines(sys.stdin.buffer, wire), stdout=wire) as (read, write):
            await low.run(read, write, low.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        os.dup2(wire_fd, 1)
