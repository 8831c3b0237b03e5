"""The Rust engine (crates/squall_python), built by maturin as ``squall._engine``.

Two halves:

* The *recording entry points* (``call``, ``ret``, ``unwind``, ``suspend``, ``resume``, ``expr``,
  ``bind``, ``loop_iter``, ``async_for``, ``async_with``) are raw ``METH_FASTCALL`` C functions
  called by instrumented code. They never raise (``loop_iter`` raises what ``iter()`` raises)
  and never change the value passed through them (``loop_iter``, ``async_for`` / ``async_with``
  hand back a wrapper the program cannot tell apart); if something inside fails, the event is
  dropped and counted (``engine_stats()["dropped"]``).
* The *queries* answer over the recorded timelines. Everything else in ``squall`` builds on them.

Ids: a *form* is one instrumented function (or lambda); a *site* is one place in a form's source
(a ``return``, a ``yield``, an ``await``; expressions later). Both are registered by the
instrumenter when it rewrites a module, and their ids are baked into the rewritten code as
constants.
"""

from typing import Any, Callable, Optional, Sequence

# Form kinds (register_form ``kind``).
FORM_FUNCTION: int  # 0: plain function or method
FORM_GENERATOR: int  # 1: generator function (resumable)
FORM_COROUTINE: int  # 2: async def (resumable)
FORM_ASYNC_GENERATOR: int  # 3: async generator (resumable)
FORM_LAMBDA: int  # 4: lambda (no unwind is recorded: lambdas hold no statements)
FORM_MODULE: int  # 5: a module's top-level code

# Site kinds (register_site ``kind``).
SITE_RETURN: int  # 0: `return x` or falling off the end
SITE_YIELD: int  # 1: `yield x` (the frame suspends; it resumes with a new fn-call)
SITE_AWAIT: int  # 2: `await x` / `yield from x` (suspends around the delegation)
SITE_EXPR: int  # 3: a sub-expression whose value is recorded (full mode)
SITE_BIND: int  # 4: a binding of `symbol` (full mode)
SITE_WRITE: int  # 5: an attribute write of `symbol`, or an item write / setattr (no symbol) (full mode)

# --- registration (done by the instrumenter, at rewrite time) -------------------------------

def note_source(file: str, data: bytes) -> None:
    """Notes that ``file`` was compiled from exactly ``data``: its size and SHA-256 go into the
    recording, so readers can tell whether the file on disk is still the recorded one."""

def read_source(path: str) -> tuple[str, bool, Optional[str]]:
    """``(text, verified, note)`` of a source file of the live recording: a regular file under
    the size cap whose size and SHA-256 match what was compiled (``verified`` False, with a
    ``note``, when no hash was noted). Raises ValueError saying why not (changed since recorded,
    not a source of the recording, a device, FIFO, symlink out of the tree, too large)."""

def register_form(fn_ns: str, fn_name: str, file: str, line: int, params: Sequence[str], kind: int) -> int:
    """Registers one function; returns its form id. ``params`` names what `call` will receive,
    in order (``*args`` and ``**kwargs`` arrive as one tuple / one dict each)."""

def register_site(
    form_id: int,
    kind: int,
    line: int,
    col: int,
    end_line: int,
    end_col: int,
    symbol: Optional[str] = None,
    reads: Optional[tuple[int, int, int, int, list[str], Optional[str]]] = None,
) -> int:
    """Registers one site inside a form; returns its site id. Binding sites name their
    ``symbol``. ``reads``: what the site's value is computed from (``origin`` walks it): the
    value expression's range, the local names it reads, the attribute it reads."""

# --- recording entry points (hot; METH_FASTCALL; never raise) --------------------------------

def call(form_id: int, *param_values: Any) -> None:
    """A frame of ``form_id`` starts: pushes an fn-call entry with its parameter values."""

def ret(site_id: int, value: Any) -> Any:
    """The frame returns ``value`` at ``site_id``: pushes an fn-return entry; returns ``value``."""

def unwind(form_id: int, exc: BaseException) -> None:
    """The frame of ``form_id`` is left by ``exc``: pushes an fn-unwind entry."""

def suspend(site_id: int, value: Any) -> Any:
    """A resumable frame suspends (yield / await / yield from) at ``site_id`` handing out
    ``value``: pushes an fn-return entry for this segment; returns ``value``."""

def resume(form_id: int, sent: Any) -> Any:
    """A resumable frame resumes after a suspension with ``sent`` (what ``send()`` passed, or
    the result of the ``await`` / ``yield from``): pushes a new fn-call entry whose one arg is
    ``sent``; returns ``sent``. A frame resumed by ``throw()`` or ``close()`` gets no call to
    ``resume``: the engine opens the resumption itself at the frame's next event."""

def expr(site_id: int, value: Any) -> Any:
    """A sub-expression at ``site_id`` evaluated to ``value``: pushes an expr entry in the
    innermost frame of the site's form; returns ``value``."""

def recv(site_id: int, value: Any) -> Any:
    """A receiver (the ``x`` of ``x.a``, ``x[k]``, ``x.m()``) at ``site_id`` evaluated to
    ``value``: an expr entry as ``expr`` pushes, whose value, when it is an instance this thread
    recorded a state of already, is a reference to that state; returns ``value``."""

def bind(site_id: int, value: Any) -> Any:
    """The symbol of binding site ``site_id`` is bound to ``value``: pushes a bind entry;
    returns ``value`` (``x = bind(SITE, v)``)."""

def binds(first_site_id: int, *values: Any) -> bool:
    """The bindings of the names one statement stores (``a, b = t``, ``for k, v in it``), the
    i-th value at site ``first_site_id + i``: records what a ``bind`` per name records. Returns
    True (a comprehension's ``if binds(S, k, v)`` keeps every item)."""

# Writes (full mode): each does the program's store itself (CPython's own PyObject_SetAttr /
# SetItem / DelAttr / DelItem, exceptions propagate unchanged), then pushes a write entry.
def wattr(site_id: int, value: Any, obj: Any, name: str) -> Any:
    """``obj.name = value``; returns ``value`` (chained targets nest)."""

def witem(site_id: int, value: Any, obj: Any, key: Any) -> Any:
    """``obj[key] = value``; returns ``value``."""

def wdelattr(site_id: int, obj: Any, name: str) -> None:
    """``del obj.name``."""

def wdelitem(site_id: int, obj: Any, key: Any) -> None:
    """``del obj[key]``."""

def waugattr(site_id: int, obj: Any, name: str, op: int, operand: Any) -> None:
    """``obj.name op= operand`` (``op``: index into rewrite.AUG_OPS)."""

def waugitem(site_id: int, obj: Any, key: Any, op: int, operand: Any) -> None:
    """``obj[key] op= operand``."""

def wsetattr(site_id: int, obj: Any, name: Any, value: Any) -> None:
    """``setattr(obj, name, value)``."""

def recursion_used() -> Optional[int]:
    """Frames (and, before 3.12, C calls) of the calling thread counted against the recursion
    limit now; None if the interpreter's thread state is not laid out as expected."""

def shift_recursion(n: int) -> bool:
    """Makes the calling thread's recursion counter say ``n`` fewer frames are in use (``cli``:
    squall's own frames below the program); whether it did."""

class WriteSlot:
    """A write target ``obj.key`` / ``obj[key]``: storing ``.v`` stores there and records it,
    loading ``.v`` loads it (see ``wslot``)."""

    v: Any

def wslot(site_id: int, obj: Any, key: Any, item: bool) -> WriteSlot:
    """The target ``obj.key`` (``item`` false) or ``obj[key]`` for a store Python evaluates itself
    (tuple targets, chains with names, ``for``/``with`` targets, augmented writes):
    ``a.x, b[i] = v`` is rewritten to ``_sq_wslot(S1, a, "x", False).v, _sq_wslot(S2, b, i, True).v = v``."""

def bound_entry(entry: str, id: int) -> Callable[..., Any]:
    """``entry`` ("call", "ret", "expr", "bind" or a write entry: "wattr", "witem", "wdelattr",
    "wdelitem", "waugattr", "waugitem", "wsetattr", "wslot"; or "binds", "suspend", "resume", "recv") bound to one form (call) or site: the result
    called with the remaining arguments records what ``entry(id, ...)`` records and returns what
    it returns. Instrumented code holds these as constants (``rewrite.bind_entry_constants``);
    ``id`` may be an int subclass (``rewrite.BoundSite``, which makes them picklable)."""

def loop_iter(site_id: int, iterable: Any, bind: Any = ...) -> Any:
    """``for x in loop_iter(SITE, iterable)``: ``iter(iterable)`` (its errors are CPython's),
    wrapped so that each item it yields is recorded as ``bind(SITE, item)`` before the loop
    binds it; ends and errors of the iterator pass through unchanged, and no frame of the
    wrapper shows in tracebacks. ``bind``: a callable to record through instead of the
    engine's own (an explicit engine in tests); an exception it raises ends the loop."""

def async_for(site_id: int, form_id: int, obj: Any, suspend: Any = ..., resume: Any = ...) -> Any:
    """``async for x in async_for(SITE, FORM, obj)``: ``obj`` wrapped so that each implicit
    await of ``__anext__()`` is a suspension of the frame of ``form_id`` at ``site_id``
    (``suspend(site_id, type(awaitable))``, then ``resume(form_id, item)`` or, when the await
    raised (``StopAsyncIteration`` ending the loop), ``resume(form_id, type(exc))``). Types, not
    the objects: they would keep the iterator alive. Returns ``obj`` itself if it has no
    ``__aiter__`` (CPython then raises its own error). Behaviour, errors and tracebacks stay
    CPython's; no frame of the wrapper shows. ``suspend`` / ``resume``: callables to record
    through instead of the engine's own (an explicit engine in tests)."""

def async_with(site_id: int, form_id: int, obj: Any, suspend: Any = ..., resume: Any = ...) -> Any:
    """``async with async_with(SITE, FORM, obj)``: the awaits of ``obj.__aenter__()`` and
    ``obj.__aexit__()`` recorded as suspensions, as for ``async_for`` (resumed with the awaited
    result: the bound value, the suppress flag). Returns ``obj`` itself if its type lacks
    ``__aenter__`` or ``__aexit__`` (CPython then raises its own error)."""

# --- recording control -----------------------------------------------------------------------

def start_recording() -> None: ...
def stop_recording() -> None: ...
def is_recording() -> bool: ...
def clear_recordings() -> None: ...
def set_flow(flow_id: int) -> None: ...
def current_flow() -> int: ...
def set_thread_namer(fn: Callable[[], str]) -> None:
    """``fn()`` is called once per new thread timeline, on that thread, for its name."""

def set_limits(
    thread_trace_limit: Optional[int] = None,
    fn_call_limit: Optional[int] = None,
    memory_limit: Optional[int] = None,
) -> None: ...
def get_limits() -> dict[str, Optional[int]]: ...
def limits_hit() -> list[dict[str, Any]]: ...
def engine_stats() -> dict[str, int]:
    """entries, values (value-store nodes, evicted ones included), values_held (those still in
    memory: saved ones leave with their entries), bytes (all the recording holds: what the
    memory limit counts) and its parts value_bytes, writer_bytes, timeline_bytes (of which
    carried_bytes: what evicted entries left of the exceptions), index_bytes, encoder_bytes,
    identity_bytes; timelines, forms, dropped, unmatched, repaired, snapshot_errors,
    lost_during_ui."""

def set_snapshot_budget(
    max_depth: int, max_length: int, max_items: int, max_string: int, object_depth: int = ...
) -> None: ...
def register_snapshot(tp: type, fn: Callable[[Any], Any]) -> None: ...

# --- queries: methods of Recording (below) --------------------------------------------------

def object_id(obj: Any) -> Optional[int]:
    """The recording's identity of a live object (``ObjectSnapshot.obj_id``), or None."""

def next_ids() -> tuple[int, int]:
    """(forms, sites) registered so far: the ids the next registrations get."""

def registrations_since(
    form_start: int, site_start: int
) -> tuple[
    list[tuple[str, str, str, int, list[str], int]],
    list[tuple[int, int, int, int, int, int, Optional[str], Optional[tuple]]],
]:
    """The registrations from those ids on, as arguments to replay them (code cache)."""

def get_snapshot_budget() -> dict[str, int]: ...

# --- recording files -------------------------------------------------------------------------

def open_sink(
    path: str, program: str, argv: list[str], python: str, squall: str, cwd: str, memory_window: int | None = None
) -> None:
    """Starts streaming the recording to ``path`` (a background thread flushes twice a second).
    ``memory_window``: bytes of entries a thread keeps in memory once they are saved (``None``:
    all, up to half the memory limit)."""

def flush_sink() -> None: ...
def sink_path() -> Optional[str]: ...
def close_sink(stats: list[tuple[str, int]]) -> Optional[str]:
    """Flushes the rest, writes the end marker with ``stats``; returns the path."""

def pause_flusher() -> None:
    """Before ``os.fork()``: stops the flusher thread (the process forks with the program's threads only)."""

def resume_flusher() -> None:
    """After ``os.fork()``, in the parent: starts the flusher again."""

class Recording:
    """A recording: this process's live one (``live()``) or a file (``load_recording``), with
    the same query methods (each written once, over either: crates/squall_python/src/bindings/file.rs)."""

    @property
    def path(self) -> Optional[str]: ...
    def info(self) -> dict[str, Any]: ...
    def all_flows(self) -> dict[int, list[int]]: ...
    def all_threads(self) -> list[tuple[int, int]]: ...
    def flow_threads_info(self, flow_id: int) -> list[dict[str, Any]]: ...
    def timeline_len(self, flow_id: int, thread_id: int) -> int: ...
    def entry(self, flow_id: int, thread_id: int, idx: int) -> dict[str, Any]: ...
    def entries(self, flow_id: int, thread_id: int, start: int, end: int) -> list[dict[str, Any]]: ...
    def timeline_entry(self, flow_id: int, thread_id: int, idx: int, drift: str) -> dict[str, Any]: ...
    def frame_data(self, flow_id: int, thread_id: int, idx: int) -> dict[str, Any]: ...
    def stack_for_frame(self, flow_id: int, thread_id: int, idx: int) -> list[dict[str, Any]]: ...
    def callstack_node_childs(
        self, flow_id: int, thread_id: int, idx: Optional[int], offset: int = 0, limit: Optional[int] = None
    ) -> list[int]: ...
    def fn_call_stats(self, flow_id: int, thread_id: Optional[int] = None) -> list[dict[str, Any]]: ...
    def writes(
        self,
        flow_id: int,
        thread_id: Optional[int] = None,
        obj_id: Optional[int] = None,
        attr_or_key: Any = None,
        type_name: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> dict[str, Any]: ...
    def find_fn_call_entry(
        self,
        flow_id: int,
        thread_id: int,
        fn_ns: Optional[str] = None,
        fn_name: Optional[str] = None,
        args_pred: Optional[Callable[[list[Any]], bool]] = None,
        from_idx: Optional[int] = None,
        backward: bool = False,
    ) -> Optional[dict[str, Any]]: ...
    def bindings(self, flow_id: int, thread_id: int, idx: int) -> list[dict[str, Any]]: ...
    def history(self, flow_id: int, obj_id: int, thread_id: Optional[int] = None) -> list[dict[str, Any]]: ...
    def find_expr_entry(
        self,
        flow_id: int,
        thread_id: int,
        coord: Optional[tuple[int, int, int, int]] = None,
        file: Optional[str] = None,
        line: Optional[int] = None,
        value_pred: Optional[Callable[[Any], bool]] = None,
        from_idx: Optional[int] = None,
        backward: bool = False,
        any_kind: bool = False,
    ) -> Optional[dict[str, Any]]: ...
    def total_order_timeline(self, flow_id: int, start: int = 0, limit: int = 1000) -> list[dict[str, Any]]: ...
    def deref(self, value_ref: int) -> Any: ...
    def val_pprint(
        self, value_ref: int, print_level: Optional[int] = None, print_length: Optional[int] = None
    ) -> str: ...
    def val_expand(
        self,
        value_ref: int,
        path: Sequence[int] = (),
        offset: int = 0,
        limit: Optional[int] = None,
        print_level: Optional[int] = None,
        print_length: Optional[int] = None,
    ) -> dict[str, Any]:
        """One level of the value a ref names, paged as the UI's value inspector pages it
        (``squall_trace::value_tree``): the node ``path`` names (child positions) with ``type``,
        ``id``, ``len``, ``earlier`` (and ``earlier_idx``: the entry that earlier state is as of,
        None when not known), ``repr`` (the core's printer within the bounds),
        ``children_total``, ``indexed``, ``truncated_when_recorded``, ``offset``, ``more``, and
        ``children`` from ``offset`` (at most ``limit``): the same fields plus ``key`` (the UI's
        text), ``key_kind`` (item, key, attr), ``key_exact`` (``key`` is the key's literal) and
        ``path``."""
    def calls_where(
        self, flow_id: int, thread_id: int, fns: list[tuple[str, str]], where: Optional[str] = None
    ) -> tuple[list[int], list[int], Optional[str]]:
        """The idxs of the calls of the ``(fn_ns, fn_name)`` functions the predicate ``where``
        holds for (``squall_trace::predicate``; all without one), those it could not decide for
        (they read what the recording cut), and why (None: none); ValueError for a bad one."""
    def arg_refs(self, args_ref: int) -> list[Optional[int]]:
        """The value ref of each argument of the call whose ``fn_args_ref`` is ``args_ref``."""
    def forms(self) -> list[dict[str, Any]]: ...
    def read_source(self, path: str) -> tuple[str, bool, Optional[str]]: ...
    def idxs_of_type(self, flow_id: int, thread_id: int, entry_type: str) -> list[int]: ...
    def is_recording(self) -> bool: ...
    def outputs(self) -> tuple[list[dict[str, Any]], tuple[int, int]]:
        """What the program wrote to stdout and stderr (chunks as dicts), and (chunks,
        characters) not kept past the bound."""
    def exceptions(self, flow_id: Optional[int] = None, thread_id: Optional[int] = None) -> list[dict[str, Any]]: ...
    def exception_text(self, value_ref: int) -> Optional[str]:
        """The line Python's traceback ends with for an exception's ref (``Type: message``)."""
    def unwind_chain(self, flow_id: int, thread_id: int, idx: int) -> list[tuple[int, int, Optional[int]]]:
        """``(call_idx, unwind_idx, last_event_idx)`` of each frame the exception at fn-unwind
        ``idx`` left, from there outward."""
    def bookmarks(self, flow_id: Optional[int] = None) -> list[dict[str, Any]]: ...
    def line_hits(
        self,
        flow_id: int,
        thread_id: Optional[int],
        file: str,
        line: int,
        from_idx: Optional[int] = None,
        backward: bool = False,
    ) -> list[dict[str, Any]]: ...
    def power_step(self, flow_id: int, thread_id: int, idx: int, how: str, backward: bool = False) -> Optional[int]: ...
    def loop_iterations(self, flow_id: int, thread_id: int, idx: int) -> tuple[list[int], int]: ...
    def search(
        self,
        flow_id: int,
        thread_id: int,
        text: str,
        kind: str = "value",
        from_idx: int = 0,
        to_idx: Optional[int] = None,
        limit: int = 100,
        ignore_case: bool = True,
    ) -> dict[str, Any]:
        """The core's text search (the UI's) over entries ``from_idx..to_idx`` of one thread:
        ``{"hits": [(idx, text)], "next_idx"}``; ``kind`` is "value" (a printed value contains
        ``text``) or "fn" (a called function's name does); ``text`` of a hit is what it was found
        in (a call's arguments as a list)."""
    def export_chrome(self, out: str, progress: Optional[Callable[[int, int], Any]] = None) -> None: ...
    def export_sqlite(self, out: str, progress: Optional[Callable[[int, int], Any]] = None) -> None: ...

def live() -> Recording:
    """This process's live recording, read through the engine at each call."""

def load_recording(path: str, progress: Optional[Callable[[int, int], Any]] = None) -> Recording:
    """Reads a recording file (ValueError for a foreign, newer or damaged file; OSError if it
    cannot be read)."""

# --- the browser UI ----------------------------------------------------------------------------

def serve_file(path: str, host: str = "127.0.0.1", port: int = 0, token: Optional[str] = None) -> str:
    """Serves the web UI for a recording file on ``host:port`` (0: any free port) from a
    background thread; returns the URL with its access token (``token``, else a random one;
    ValueError if ``token`` is too short or not URL-safe)."""

def serve_live(host: str = "127.0.0.1", port: int = 0, token: Optional[str] = None) -> str:
    """Serves the web UI over this process's live recording; returns the URL with its token
    (anyone holding it can run code in this process: docs/security.md).
    Recording pauses while the server reads it for a query (events then are counted in
    ``engine_stats()["lost_during_ui"]``)."""

# --- outputs (crates/squall_python/src/recorder/outputs.rs) -----------------------------------------------

def output_tee(write: Any, stream: str, kind: str = "text", encoding: Optional[str] = None) -> Any:
    """A tee around ``write`` for ``stream`` ("stdout" or "stderr"; ValueError otherwise): a
    builtin function named ``write`` that calls ``write`` and notes what it wrote. ``kind``:
    "text" (a text stream's ``write``: notes a str), "binary" (its buffer's ``write``: notes bytes
    decoded with ``encoding``, None for UTF-8, unless the text layer is writing them) or "flush"
    (a text stream's ``flush``, named ``flush``: notes nothing)."""

def tee_wrapped(obj: Any) -> Any:
    """The ``write`` a tee made by ``output_tee`` wraps; None for anything else."""

# --- agent queries (crates/squall_python/src/bindings/agent_queries.rs); recording=None: the live one ----

def origin(flow_id: int, thread_id: int, idx: int, max_steps: int = 16, recording: Optional[Recording] = None) -> dict:
    """Where the value of entry ``idx`` came from, cheapest steps first: ``{"steps": [{"step",
    "from_step", "via", "via_name", "depth", "thread_id", "idx", "kind", "param", "fn", "file",
    "line", "coord", "symbol", "span", "value", "leaf", "obj_id"}], "left_out"}``."""

def diff(
    flow_id: int,
    thread_id: int,
    a_idx: Optional[int] = None,
    b_idx: Optional[int] = None,
    b_flow_id: Optional[int] = None,
    b_thread_id: Optional[int] = None,
    recording: Optional[Recording] = None,
    b_recording: Optional[Recording] = None,
) -> dict:
    """Two calls (``a_idx``, ``b_idx``) compared, or without idxs two timelines by their root
    calls: ``{"calls": {"a_idx", "b_idx", "args_equal", "outcome_equal", "path", "first",
    "first_path"}}`` (``first``: ``{"kind": "path"|"value", "a_idx", "b_idx"}``); timelines add
    ``roots_a``, ``roots_b``, ``at``."""
