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
import inspect
import json
import sys
import threading
import traceback
import typing
from typing import Annotated, Any, Callable, Optional, Union

Thread = Union[int, str, None]

try:  # pydantic comes with the mcp SDK: constraints go into each tool's input schema
    from pydantic import Field

    Idx = Annotated[int, Field(strict=True, ge=0, description="an entry's idx in its thread, from another answer")]
    Count = Annotated[int, Field(strict=True, ge=0)]
    Text = Annotated[str, Field(min_length=1)]
    Thread = Union[Annotated[int, Field(strict=True, ge=0)], str, None]  # type: ignore[misc]
except ImportError:  # no SDK (main() says so): plain types, the agent checks the values
    Idx = Count = int  # type: ignore[misc]
    Text = str  # type: ignore[misc]

INSTRUCTIONS = """\
This server answers questions about one squall recording of a Python program: every call, return,
exception, local binding, expression value and attribute/item write, per thread, in order.
Start with `summary` (threads, most called functions, exceptions). Find the suspicious call with
`calls` (filter with `where`, e.g. "ret > 50") or `exceptions`. Then ask where a wrong value came
from with `origin` (idx of a return, binding or expression: it walks back through names, calls,
arguments and the writes that changed a field, across threads), compare a good and a bad call
with `diff` (where they first diverge), see an object's changes with `history`/`writes`, and
drill down with `call`, `frames`, `stack`, `bindings`, `window`, `source`, `search`. An idx is
per thread: pass the thread it came from (id or name). Values are previews (`Type#N(...)`: N is
the object's identity for `history`/`writes`). Every answer is under 8 KB; a cut one says what
it left out (`left_out`, `more`) and how to ask for the rest."""


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


def _kind_of(prop: dict) -> str:
    """A JSON schema property's type, in words."""
    kinds = [p for p in prop.get("anyOf", [prop])]
    words = []
    for k in kinds:
        t = k.get("type")
        if t == "integer":
            low = k.get("minimum")
            words.append("a whole number" + (f" >= {low}" if low is not None else ""))
        elif t == "string":
            words.append("a non-empty string" if k.get("minLength") else "a string")
        elif t == "null":
            words.append("null (leave it out)")
        elif t:
            words.append(f"a {t}")
    return " or ".join(words) or "a value"


def explain_invalid(tool: str, arguments: dict, error: Any, schema: Optional[dict]) -> str:
    """What was wrong with a tool's arguments and what to send instead: one line per problem,
    quoting the value sent, with the parameter's expected type and description."""
    props = (schema or {}).get("properties", {})
    lines = []
    for err in error.errors():
        field = ".".join(str(p) for p in err.get("loc", ())) or "?"
        prop = props.get(str(err.get("loc", ("",))[0]), {})
        desc = prop.get("description")
        want = _kind_of(prop) if prop else "?"
        if err.get("type") == "missing":
            lines.append(f"`{field}` is missing: send {want}" + (f" ({desc})" if desc else ""))
        else:
            got = arguments.get(field, err.get("input"))
            lines.append(f"`{field}` = {json.dumps(got)[:80]} is not {want}" + (f" ({desc})" if desc else ""))
    known = ", ".join(f"{k}: {_kind_of(v)}" for k, v in props.items())
    return f"{tool}: " + "; ".join(lines) + f". Its parameters are {known}."


def build_server(rec: Any) -> Any:
    """The MCP server for a loaded recording (``squall.load(path)``), tools registered."""
    from squall import __version__, agent
    from squall import mcp_schemas as schema
    from squall.mcp_other import OtherRecordings

    base = _server_class()
    tool_error = _tool_error()
    agent.set_answer_budget(agent.DEFAULT_BUDGET)  # answers stay under 8 KB (this process serves one agent)

    class SquallServer(base):  # type: ignore[misc, valid-type]
        async def call_tool(self, name: str, arguments: dict, *rest: Any, **kw: Any) -> Any:
            try:
                from pydantic import ValidationError
            except ImportError:  # pragma: no cover - pydantic comes with the SDK
                ValidationError = ()  # type: ignore[assignment,misc]  # noqa: N806
            tool = self._tool_manager.get_tool(name)
            if tool is None:
                names = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
                raise tool_error(f"there is no tool {name!r}: the tools are {names}")
            try:
                return await super().call_tool(name, arguments, *rest, **kw)
            except tool_error as e:
                cause = e.__cause__
                if isinstance(cause, ValidationError):
                    raise tool_error(explain_invalid(name, arguments or {}, cause, tool.parameters)) from None
                raise

    try:
        server = SquallServer("squall", instructions=INSTRUCTIONS, version=__version__)
    except TypeError:  # mcp 1.x: the version lives on the low-level server
        server = SquallServer("squall", instructions=INSTRUCTIONS)
        server._mcp_server.version = __version__
    lock = threading.Lock()  # one question at a time: tools may run on worker threads

    def tool(answer_schema: Any) -> Callable[[Callable[..., dict]], Callable[..., Any]]:
        from mcp.types import CallToolResult, TextContent

        def register(fn: Callable[..., dict]) -> Callable[..., Any]:
            @functools.wraps(fn)
            def run(*args: Any, **kwargs: Any) -> Any:
                # Nothing but protocol on stdout: stray prints go to stderr.
                with lock, contextlib.redirect_stdout(sys.stderr):
                    try:
                        result = fn(*args, **kwargs)
                    except agent.AgentError as e:
                        raise tool_error(str(e)) from None
                    except Exception as e:  # noqa: BLE001 - a squall bug: the agent gets the reason, stderr the trace
                        traceback.print_exc(file=sys.stderr)
                        raise tool_error(
                            f"squall failed to answer `{fn.__name__}` ({type(e).__name__}: {e}); "
                            "this is a bug in squall: please report it"
                        ) from None
                # The answer as structured content (checked against the tool's output schema),
                # and the same JSON as text for clients that read text only.
                return CallToolResult(
                    content=[TextContent(type="text", text=_json_text(result))],
                    structured_content=json.loads(_json_text(result)),
                )

            # The SDK reads the parameters' and the answer's types from the signature: the
            # answer's schema rides on the CallToolResult (`Annotated[CallToolResult, Schema]`).
            hints = typing.get_type_hints(fn, include_extras=True)
            sig = inspect.signature(fn)
            params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]
            returns = Annotated[CallToolResult, answer_schema]
            del run.__wrapped__
            run.__signature__ = sig.replace(parameters=params, return_annotation=returns)  # type: ignore[attr-defined]
            run.__annotations__ = {**hints, "return": returns}
            description = " ".join((fn.__doc__ or "").split())
            server.tool(description=description)(run)
            return run

        return register

    @tool(schema.Summary)
    def summary() -> dict:
        """Returns what the recording holds: program, argv, completed or cut short, the object
        depth it was recorded at (objects deeper than that, and known ones at 0, show an earlier
        state, marked), flows and their threads (ids, names, entry and call counts), the number
        of functions, the 10 most called, and up to 10 exceptions (idx, thread, `Type:
        message`, function, where caught) with their total. Call this first."""
        return agent.summary(rec)

    @tool(schema.Calls)
    def calls(
        fn: Text,
        ns: Optional[str] = None,
        thread: Thread = None,
        flow: Optional[Count] = None,
        where: Optional[str] = None,
        limit: Count = 10,
        offset: Count = 0,
    ) -> dict:
        """Returns the recorded calls of a function in order, each with thread, idx, argument
        previews by parameter name, and `returned`, `yielded` or `raised` (with the exit
        `ret_idx`). `fn`: a name (`process_invoice`), `Class.method` or `module.qualname`; `ns`
        narrows to a module; `thread` (id or name) to one thread; `where` keeps calls a
        predicate holds for, over the parameters, `ret` and `raised` (e.g. "weight == 10",
        "ret > 50", "raised is not None", "len(items) == 0"). `total` counts the matching
        calls; `offset`/`limit` page through; `more` says how to get the rest."""
        return agent.calls(rec, fn, ns=ns, flow=flow, thread=thread, limit=limit, offset=offset, where=where)

    @tool(schema.Call)
    def call(idx: Idx, thread: Thread = None, flow: Optional[Count] = None, max_children: Count = 20) -> dict:
        """Returns one call in full: function, file and def line, arguments, what it returned or
        raised (with the exit idx), its parent call and its children (calls it made, each with
        args and outcome; `children_total` counts them). `idx`: the call's idx (any entry of the
        frame works) in `thread` (id or name; default MainThread)."""
        return agent.call(rec, idx, flow=flow, thread=thread, max_children=max_children)

    @tool(schema.Frames)
    def frames(
        fn: Text,
        ns: Optional[str] = None,
        thread: Thread = None,
        flow: Optional[Count] = None,
        where: Optional[str] = None,
        limit: Count = 5,
        offset: Count = 0,
    ) -> dict:
        """Returns the frames of a function's calls with their locals: for each call (found as
        `calls` finds them, `where` included) its thread, idx, args, outcome and `locals` (every
        local variable's preview as the frame ended). At most `limit` frames from `offset`."""
        return agent.frames(rec, fn, ns=ns, flow=flow, thread=thread, limit=limit, offset=offset, where=where)

    @tool(schema.Origin)
    def origin(idx: Idx, thread: Thread = None, flow: Optional[Count] = None, max_steps: Count = 24) -> dict:
        """Returns where the value of entry `idx` came from, step by step back to its sources,
        breadth first: each step has `step`, `from_step` (the step it feeds), `via` (`name X`:
        the binding or parameter X; `sub-expression`; `call result`; `argument X`; `passed from
        caller`; `write`: the last write, in any thread, to the field read, on object
        `obj_id`), the entry (thread, idx, kind, fn, line, source `code`) and its `value`; a
        step with no sources says why in `leaf` (literal, unrecorded caller, no write...). Ask
        it of a return, binding or expression holding a wrong value."""
        return agent.origin(rec, idx, flow=flow, thread=thread, max_steps=max_steps)

    others = OtherRecordings()

    @tool(schema.Diff)
    def diff(
        a_idx: Optional[Count] = None,
        b_idx: Optional[Count] = None,
        thread: Thread = None,
        b_thread: Thread = None,
        flow: Optional[Count] = None,
        b_flow: Optional[Count] = None,
        other: Optional[Text] = None,
    ) -> dict:
        """Returns two calls compared (`a_idx`, `b_idx`: fn-call idxs, the second in `b_thread`
        if given, or in the recording file at path `other`: another recording of the same
        program), or without idxs two threads/flows/recordings compared by their root calls:
        both calls' args and outcomes, `args_equal` per parameter and `outcome_equal` (content compared,
        identities ignored), the `path` of child calls down to the deepest pair that differs,
        and `first`: where that pair first diverges (`kind` "path": a different line ran;
        "value": same place, another value), each side's entry with line and text, and a
        one-line `verdict`."""
        second = None if other is None else others.get(other)
        return agent.diff(rec, a_idx, b_idx, flow=flow, thread=thread, b_flow=b_flow, b_thread=b_thread, other=second)

    @tool(schema.Exceptions)
    def exceptions(thread: Thread = None, flow: Optional[Count] = None, limit: Count = 20) -> dict:
        """Returns every exception that left a recorded function, once each: the fn-unwind idx
        and thread, `Type: message`, the function, file and line it was raised at, the frames it
        unwound (innermost first), and whether and where a recorded caller caught it."""
        return agent.exceptions(rec, flow=flow, thread=thread, limit=limit)

    @tool(schema.Writes)
    def writes(
        name: Optional[str] = None,
        type_name: Optional[str] = None,
        obj_id: Optional[Count] = None,
        thread: Thread = None,
        flow: Optional[Count] = None,
        limit: Count = 20,
    ) -> dict:
        """Returns where an attribute or item was changed (writes in instrumented code), in the
        order they happened across all threads (oldest first): by attribute `name` (or key;
        digits for an int key; `Item.price` names attribute price of type Item), of objects of recorded `type_name` (e.g. "Item") and/or the
        object `obj_id` (the N of `#N`). Each: idx, thread, function, file and line, `old` (with
        `old_from`: "previous write" (at `old_idx` of thread `old_thread_id`, maybe another
        thread), "recorded state", "unknown (not recorded before)", "unknown (not saved: ...)")
        and `new`. At most
        `limit`; `left_out` says how many more there are. Send at least one filter."""
        return agent.writes(rec, name, type_name=type_name, obj_id=obj_id, flow=flow, thread=thread, limit=limit)

    @tool(schema.History)
    def history(obj_id: Count, thread: Thread = None, flow: Optional[Count] = None, limit: Count = 50) -> dict:
        """Returns every recorded state of one object (`obj_id`: the N of `#N` in a value
        preview), oldest first, each with the thread and idx that first recorded it and its
        preview, and the writes to it in between (kind "write": `write` says what was written,
        `value` is the object as of that write); all threads merged in recorded order unless
        `thread` is given. At most `limit` rows (the first ones and the last): `states` and
        `writes` count them all, `left_out` the rows not shown."""
        return agent.history(rec, obj_id, flow=flow, thread=thread, limit=min(max(limit, 1), 200))

    @tool(schema.Stack)
    def stack(idx: Idx, thread: Thread = None, flow: Optional[Count] = None) -> dict:
        """Returns the call stack at an idx, innermost frame first: each frame's call idx,
        function, file, def line and argument previews."""
        return agent.stack(rec, idx, flow=flow, thread=thread)

    @tool(schema.Bindings)
    def bindings(idx: Idx, thread: Thread = None, flow: Optional[Count] = None) -> dict:
        """Returns the local variables of the frame at an idx as they were at that moment:
        parameters, then each name's latest binding up to idx, with value previews, the line
        that bound it, and `state_idx` when the object changed after it was bound."""
        return agent.bindings(rec, idx, flow=flow, thread=thread)

    @tool(schema.Window)
    def window(
        idx: Idx, thread: Thread = None, flow: Optional[Count] = None, before: Count = 10, after: Count = 10
    ) -> dict:
        """Returns the timeline around an idx, one line per entry (calls with args, returns with
        values, expressions with their source text and value, bindings, writes, unwinds): at
        most 200 entries either side and what fits the size cap, nearest first; `capped` says
        what was cut and where to ask next."""
        return agent.window(rec, idx, flow=flow, thread=thread, before=before, after=after)

    @tool(schema.Source)
    def source(idx: Idx, thread: Thread = None, flow: Optional[Count] = None, context: Count = 3) -> dict:
        """Returns the source code of what an idx recorded: file, line, and the lines around it
        with line numbers, the entry's own lines marked `>` (a call: its def line; an unwind:
        the line it raised from)."""
        return agent.source(rec, idx, flow=flow, thread=thread, context=context)

    @tool(schema.Search)
    def search(text: Text, thread: Thread = None, flow: Optional[Count] = None, limit: Count = 20) -> dict:
        """Returns recorded values whose printed text contains `text` (case-insensitive; not
        blank): call arguments, return values, exceptions, local bindings, expression values and
        writes, in timeline order, each with thread, idx, where it was (`in`: `args`, `return`,
        `raise`, `bind NAME`, `expr SOURCE`, `write NAME`), the function and the value around
        the match (the web UI's search: the same entries match). Stops at
        `limit` hits, the size cap or 20 seconds (`complete` says whether all was searched)."""
        return agent.search(rec, text, flow=flow, thread=thread, limit=limit, max_seconds=20)

    @tool(schema.Frequencies)
    def frequencies(thread: Thread = None, flow: Optional[Count] = None, limit: Count = 30) -> dict:
        """Returns how many times each recorded function was called, most called first (all
        threads of the flow, or one `thread`); `functions` counts them all."""
        return agent.frequencies(rec, flow=flow, thread=thread, limit=limit)

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
        print(
            "squall mcp: the MCP SDK is not installed: pip install 'squall[mcp]' (or pip install mcp)", file=sys.stderr
        )
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
        return {
            "jsonrpc": "2.0",
            "id": msg_id if _valid_id(msg_id) else None,
            "error": {"code": code, "message": message},
        }

    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return error(PARSE_ERROR, f"Parse error: the message is not UTF-8 ({e})")
    try:
        msg = json.loads(text)
    except ValueError as e:
        return error(PARSE_ERROR, f"Parse error: not JSON ({e}): {text.strip()[:80]!r}")
    if isinstance(msg, list):
        return error(
            INVALID_REQUEST,
            "Invalid Request: batches (JSON arrays) are not supported by MCP; send one message per line",
        )
    if not isinstance(msg, dict):
        return error(INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {text.strip()[:80]!r}")
    msg_id = msg.get("id")
    if "id" in msg and not _valid_id(msg_id):
        return error(INVALID_REQUEST, f"Invalid Request: id must be a string or an integer, not {msg_id!r}")
    if msg.get("jsonrpc") != "2.0":
        return error(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', msg_id)
    if _has_lone_surrogate(msg):
        return error(
            INVALID_REQUEST,
            "Invalid Request: the message holds a lone surrogate escape (like \\ud800): "
            "not Unicode text; send characters outside the BMP as surrogate pairs",
            msg_id,
        )
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return error(INVALID_REQUEST, f"Invalid Request: method must be a string, not {msg['method']!r}", msg_id)
        if "params" in msg and not isinstance(msg["params"], dict):
            return error(INVALID_REQUEST, f"Invalid Request: params must be an object, not {msg['params']!r}", msg_id)
    elif "id" not in msg or ("result" in msg) == ("error" in msg):
        return error(
            INVALID_REQUEST,
            "Invalid Request: neither a request (method) nor a response (id and one of result or error)",
            msg_id,
        )
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
