"""Queries over the recorded timelines (FlowStorm's ``flow-storm.runtime.indexes.api``).

A recording is a set of *flows* (``squall.api.set_flow``; 0 by default), each holding one
*timeline* per thread. A timeline is a sequence of entries, dicts of these shapes::

    {"type": "fn-call", "idx", "fn_ns", "fn_name", "form_id", "fn_args_ref", "parent_idx",
     "ret_idx", "resumed": False}
    {"type": "fn-resume", ... the same keys as fn-call ..., "resumed": True}
    {"type": "fn-return", "idx", "fn_call_idx", "result_ref", "coord", "form_id", "kind"}
    {"type": "fn-unwind", "idx", "fn_call_idx", "throwable_ref", "coord", "form_id"}
    {"type": "expr", "idx", "fn_call_idx", "result_ref", "coord", "form_id"}          (full mode)
    {"type": "bind", "idx", "fn_call_idx", "symbol", "value_ref", "coord", "visible_after",
     "form_id"}                                                                         (full mode)

``fn_ns`` is the module, ``fn_name`` the qualified name. ``parent_idx`` is None for a call made
from unrecorded code, ``ret_idx`` None while the call has not returned. Deref ``*_ref`` keys with
``squall.values.deref_val_id``.

Generators and coroutines: each time a frame suspends (``yield``, ``await``, ``yield from``) its
segment ends with an ``fn-return`` whose ``kind`` is ``"yield"`` or ``"await"`` and whose result is
the yielded/awaited value; when it resumes, an ``fn-resume`` entry (shaped like an ``fn-call``,
``resumed: True``) opens the next segment with the sent value (or the await's result) as its
only argument. So counting ``fn-call`` entries counts calls, as ``fn_call_stats`` does; a frame
resumed by ``throw()``/``close()`` shows an ``fn-resume`` with no argument (``fn_args_ref``
derefs to ``[None]``).

A delegate (a generator or coroutine run by ``yield from``/``await`` in a recorded frame) nests
under its delegator, as the program's stack was: the delegator's segment stays open while the
delegate runs and ends with ``kind`` ``"await"`` carrying the value that passed out through it
(the delegate's yield, or what it awaited), and each time the delegate is resumed the delegator
gets an ``fn-resume`` first (with the same sent value) and the delegate's ``fn-resume`` under
it. When the delegate returns, the delegator goes on in that same segment: its ``fn-resume``
shows what was sent in, and the ``yield from``/``await`` result is an ``expr`` entry at the
``yield from``/``await`` site (in calls mode too). Not nested: a delegate that ``throw()`` or ``close()`` reaches
through its delegator (its exception handler or unwind resumes it implicitly where the stack
stands) and a delegate run through code that is not recorded (``contextlib``'s async context
managers, say).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, overload

from squall import _engine

__all__ = [
    "Queries",
    "SquallWarning",
    "Timeline",
    "all_flows",
    "all_threads",
    "bindings",
    "history",
    "callstack_node_childs",
    "callstack_root_node",
    "exception_text",
    "exceptions",
    "find_expr_entry",
    "find_fn_call_entry",
    "flow_threads_info",
    "fn_call_stats",
    "frame_data",
    "get_referenced_maps_timeline",
    "goto_line",
    "line_hits",
    "loop_iterations",
    "power_step",
    "writes",
    "stack_for_frame",
    "timeline_count",
    "timeline_entry",
    "total_order_timeline",
    "unwind_chain",
]


class SquallWarning(UserWarning):
    """Something the user should know about a query's answer (e.g. recording is off)."""


_UNSET: Any = object()


class Timeline(Sequence):
    """A thread's timeline as a read-only sequence of entry dicts, built on access.

    Its length is fixed when it is made (a live recording keeps growing: ask again for a newer
    view). Supports ``len``, indexing (negative too), slicing and iteration.
    """

    _BATCH = 4096

    def __init__(self, flow_id: int, thread_id: int, backend: Any = None) -> None:
        self.flow_id = flow_id
        self.thread_id = thread_id
        self._b = backend if backend is not None else _engine.live()
        self._len = self._b.timeline_len(flow_id, thread_id)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> dict: ...
    @overload
    def __getitem__(self, i: slice) -> List[dict]: ...
    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._len)
            if step == 1:
                return list(self._b.entries(self.flow_id, self.thread_id, start, max(start, stop)))
            return [self[j] for j in range(start, stop, step)]
        if not isinstance(i, int):
            raise TypeError(f"timeline indexes are ints (entry idxs) or slices, got {i!r}")
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(f"idx {i} is out of range: this timeline has {self._len} entries")
        return self._b.entry(self.flow_id, self.thread_id, i)

    def __iter__(self) -> Iterator[dict]:
        for start in range(0, self._len, self._BATCH):
            yield from self._b.entries(self.flow_id, self.thread_id, start, min(start + self._BATCH, self._len))

    def __repr__(self) -> str:
        return f"<squall timeline flow={self.flow_id} thread={self.thread_id} entries={self._len}>"


class Queries:
    """Every query, over one backend: the live recording in this process (the module-level
    functions of ``squall.indexes``) or a recording file (``squall.load(path)``). Both answer
    the same way."""

    def __init__(self, backend: Any) -> None:
        self._b = backend

    def deref_val_id(self, value_ref: Optional[int]) -> Any:
        """The value a ref names, as recorded (see ``squall.values.deref_val_id``)."""
        if value_ref is None:
            return None
        if not isinstance(value_ref, int) or isinstance(value_ref, bool):
            raise TypeError(f"deref_val_id expects a value ref (an int from an entry's `*_ref` key), got {value_ref!r}")
        return self._b.deref(value_ref)

    def val_pprint(
        self, value_ref: Optional[int], print_level: Optional[int] = None, print_length: Optional[int] = None
    ) -> str:
        """The recorded value printed within bounds (see ``squall.values.val_pprint``)."""
        from squall.values import pprint_ref

        return pprint_ref(self._b, value_ref, print_level, print_length)

    def val_expand(
        self,
        value_ref: int,
        path: Sequence[int] = (),
        offset: int = 0,
        limit: Optional[int] = None,
        print_level: Optional[int] = None,
        print_length: Optional[int] = None,
    ) -> dict:
        """One level of the recorded value a ref names, as the UI's value inspector opens it
        (``squall_trace::value_tree``): the node ``path`` (child positions) names, printed within
        bounds, and its children from ``offset`` (at most ``limit``), each with its ``key`` and
        ``path`` (see ``_engine.Recording.val_expand`` for the fields). The DAP server's variables
        are these."""
        return dict(self._b.val_expand(value_ref, list(path), offset, limit, print_level, print_length))

    def _warn_if_nothing_recorded(self) -> None:
        if not self._b.is_recording() and not self._b.all_flows():
            warnings.warn(
                "squall is not recording and nothing was recorded: call squall.api.start_recording() "
                "first (`squall run` records from the start)",
                SquallWarning,
                stacklevel=4,
            )

    def all_flows(self) -> Dict[int, List[int]]:
        """``{flow_id: [thread_id, ...]}`` for every flow with a recording."""
        self._warn_if_nothing_recorded()
        return dict(self._b.all_flows())

    def all_threads(self) -> List[tuple]:
        """``[(flow_id, thread_id), ...]``."""
        self._warn_if_nothing_recorded()
        return list(self._b.all_threads())

    def flow_threads_info(self, flow_id: int = 0) -> List[dict]:
        """For each thread of a flow: ``thread_id``, ``thread_name``, ``entries``, ``calls``,
        ``values`` and ``limit_hit`` (None, or which limit stopped it)."""
        self._warn_if_nothing_recorded()
        return list(self._b.flow_threads_info(flow_id))

    def timeline_count(self, flow_id: int, thread_id: int) -> int:
        return self._b.timeline_len(flow_id, thread_id)

    def get_referenced_maps_timeline(self, flow_id: int, thread_id: int) -> Timeline:
        """The timeline of one thread in one flow, entries as dicts with value refs."""
        return Timeline(flow_id, thread_id, self._b)

    def timeline_entry(self, flow_id: int, thread_id: int, idx: int, drift: str = "at") -> dict:
        """The entry reached from ``idx`` by ``drift``:

        - ``at``: idx itself; ``next`` / ``prev``: one entry forward / back (clamped to the ends);
        - ``next-over`` (FlowStorm's): the next entry of the same frame, stepping over the calls made
          from it; from the frame's exit, the next entry (back in the caller); from a call entry, its
          exit (over the whole call);
        - ``prev-over``: the previous entry of the same frame, stepping back over the calls made from
          it; from a return or unwind, its call; from a call entry, the previous entry (the previous
          call's call entry when that entry is its exit);
        - ``next-out``: the first entry after the current frame exited (back in its caller);
        - ``prev-out``: the call entry of the current frame's caller.
        """
        return self._b.timeline_entry(flow_id, thread_id, idx, drift)

    def frame_data(self, flow_id: int, thread_id: int, idx: int) -> dict:
        """The frame holding ``idx``: its function (``fn_ns``, ``fn_name``, ``file``, ``line``),
        ``fn_call_idx``, ``args_ref`` and ``arg_names``, ``parent_idx``, ``ret_idx``, ``exit_type``
        with ``result_ref`` or ``throwable_ref``, and ``bindings`` / ``expr_executions`` (empty in calls
        mode)."""
        return self._b.frame_data(flow_id, thread_id, idx)

    def stack_for_frame(self, flow_id: int, thread_id: int, idx: int) -> List[dict]:
        """The call stack at ``idx``, innermost frame first."""
        return list(self._b.stack_for_frame(flow_id, thread_id, idx))

    def callstack_root_node(self, flow_id: int, thread_id: int) -> dict:
        """The root of the call tree: a virtual node whose children are the top-level calls."""
        return {"flow_id": flow_id, "thread_id": thread_id, "fn_call_idx": None, "fn_name": None, "fn_ns": None}

    def callstack_node_childs(self, node: dict, offset: int = 0, limit: Optional[int] = None) -> List[dict]:
        """The calls made directly from ``node``'s frame (a node from ``callstack_root_node`` or from
        this function), in order; ``offset`` / ``limit`` page through huge child lists. Each child is
        its fn-call entry plus ``flow_id`` and ``thread_id``."""
        flow_id, thread_id = node["flow_id"], node["thread_id"]
        idxs = self._b.callstack_node_childs(flow_id, thread_id, node.get("fn_call_idx"), offset, limit)
        out = []
        for i in idxs:
            e = self._b.entry(flow_id, thread_id, i)
            e["flow_id"] = flow_id
            e["thread_id"] = thread_id
            e["fn_call_idx"] = i
            out.append(e)
        return out

    def total_order_timeline(self, flow_id: int = 0, start: int = 0, limit: int = 1000) -> List[dict]:
        """Every thread's entries of a flow in the order they were recorded (FlowStorm's
        total-order timeline), from the ``start``-th, at most ``limit``; each entry also carries
        ``thread_id`` and ``thread_name``. The recorder marks each switch between threads, so the
        order is exact (the GIL lets one thread record at a time). The page is the core's
        (``crates/squall_trace/src/order.rs``), the one the UI's multi-thread timeline shows."""
        return list(self._b.total_order_timeline(flow_id, start, limit))

    def fn_call_stats(self, flow_id: int = 0, thread_id: Optional[int] = None) -> List[dict]:
        """Calls per function (``fn_ns``, ``fn_name``, ``form_id``, ``cnt``), most called first, for one
        thread or (``thread_id=None``) all threads of the flow."""
        self._warn_if_nothing_recorded()
        return list(self._b.fn_call_stats(flow_id, thread_id))

    def find_fn_call_entry(
        self,
        flow_id: int = 0,
        thread_id: Optional[int] = None,
        fn_ns: Optional[str] = None,
        fn_name: Optional[str] = None,
        args_pred: Optional[Callable[[list], bool]] = None,
        from_idx: Optional[int] = None,
        backward: bool = False,
    ) -> Optional[dict]:
        """The first fn-call (from ``from_idx``, forward or ``backward``) of a function matching
        ``fn_ns`` (module) and ``fn_name`` (qualname) whose args list satisfies ``args_pred``.
        With ``thread_id=None`` every thread of the flow is searched, in thread order; the entry then
        carries ``thread_id``."""
        threads = [thread_id] if thread_id is not None else self._b.all_flows().get(flow_id, [])
        for tid in threads:
            e = self._b.find_fn_call_entry(flow_id, tid, fn_ns, fn_name, args_pred, from_idx, backward)
            if e is not None:
                e["thread_id"] = tid
                return e
        return None

    def exceptions(self, flow_id: Optional[int] = None, thread_id: Optional[int] = None) -> List[dict]:
        """One dict per exception that left a recorded frame (once, however many frames it
        unwound), at the innermost frame it left: ``flow_id``, ``thread_id``, ``idx`` (that
        fn-unwind), ``fn_ns``, ``fn_name``, ``exc_type`` (as Python's traceback names it:
        ``module.Qualname``, the module left out for ``__main__`` and builtins), ``message`` (what
        ``str(exc)`` says), ``text`` (the traceback's last line, ``exc_type: message``), ``obj_id``
        (the exception's recorded identity, 0: none),
        ``throwable_ref``, ``fn_call_idx``, ``raised_idx`` (the innermost frame's last recorded
        event before it unwound), ``frames`` (how many recorded frames it unwound), ``chain``
        (``(call idx, unwind idx)`` of each, innermost first), ``caught`` (True if a recorded
        caller handled it: its frame did not unwind with it), ``caught_in`` (that caller,
        ``module.qualname``) and ``caught_in_idx`` (its call entry). The UI's exceptions list is
        the same query (``squall_trace::exceptions``)."""
        return [dict(x) for x in self._b.exceptions(flow_id, thread_id)]

    def exception_text(self, value_ref: Optional[int]) -> Optional[str]:
        """The line Python's traceback ends with for the exception a ``throwable_ref`` names
        (``Type: message``, as ``traceback.format_exception_only`` says it, from the recorded
        exception: no code of the program runs); None when no exception was recorded."""
        return None if value_ref is None else self._b.exception_text(value_ref)

    def unwind_chain(self, flow_id: int, thread_id: int, idx: int) -> List[tuple]:
        """The frames the exception at fn-unwind ``idx`` left, from that frame outward:
        ``(call idx, unwind idx, last event idx)`` of each (the ``chain`` of :meth:`exceptions`
        from there; the last: the frame's last expression, binding or write before it unwound,
        where it raised or just before, None if it recorded none)."""
        return list(self._b.unwind_chain(flow_id, thread_id, idx))

    def power_step(self, flow_id: int, thread_id: int, idx: int, how: str, backward: bool = False) -> Optional[dict]:
        """Power stepping: the next (``backward``: previous) entry like the one at ``idx``, or None:
        ``how`` is ``"coord"`` (the same place: the same site, or a call of the same function),
        ``"fn"`` (a call of the function whose frame holds ``idx``), ``"identity"`` (the same
        recorded value or object) or ``"equality"`` (an equal recorded value)."""
        found = self._b.power_step(flow_id, thread_id, idx, how, backward)
        return None if found is None else self._b.entry(flow_id, thread_id, found)

    def loop_iterations(self, flow_id: int, thread_id: int, idx: int) -> dict:
        """The iterations of the expression, binding or write at ``idx`` in its frame: every entry
        of the same site there, in order (``idxs``), and the position of ``idx`` among them
        (``pos``)."""
        idxs, pos = self._b.loop_iterations(flow_id, thread_id, idx)
        return {"idxs": list(idxs), "pos": pos}

    def bindings(self, flow_id: int, thread_id: int, idx: int) -> List[dict]:
        """The locals visible at ``idx`` in its frame: the parameters, then for each symbol bound up
        to ``idx`` its latest binding (loops included): dicts with ``symbol``, ``value_ref``,
        ``coord``, ``visible_after`` (the idx from which the binding holds). A value with an
        identity (list, dict, object) is shown in its newest state recorded in this thread at or
        before ``idx``, not as it was bound; ``state_idx`` then says which entry recorded it. The
        writes recorded to it after that state, up to ``idx``, are applied: ``writes_applied``
        says how many, and ``state_idx`` is then the last of them (the value is the object as of
        that write)."""
        return list(self._b.bindings(flow_id, thread_id, idx))

    def history(self, obj_id: int, flow_id: int = 0, thread_id: Optional[int] = None) -> List[dict]:
        """Every distinct recorded state of the object with recorded identity ``obj_id``, and the
        writes to it in between, oldest first: dicts with ``kind`` ("state" or "write"),
        ``thread_id``, ``idx`` (the entry that first recorded that state, None when that entry
        is not held; or the write entry), ``value_ref`` and ``preview`` (for a write: the object
        as of that write, its last state with the writes since applied); a write also has
        ``name`` (the attribute, or the key's preview), ``is_attr``, ``new_ref`` and
        ``new_preview`` (None: a delete). All threads of the flow are merged in the order their
        entries were recorded, unless ``thread_id`` picks one."""
        return list(self._b.history(flow_id, obj_id, thread_id))

    def outputs(
        self,
        stream: Optional[str] = None,
        flow_id: Optional[int] = None,
        thread_id: Optional[int] = None,
        contains: Optional[str] = None,
    ) -> List[dict]:
        """What the program wrote to stdout and stderr, in order (``squall.outputs``): dicts with
        ``n``, ``stream``, ``flow_id``, ``thread_id``, ``thread_name``, ``idx`` (the writing
        thread's last entry when it wrote; None before its first), ``text``, ``chars`` and ``cut``.
        Text past the recording's bound was not kept: a ``SquallWarning`` says how much."""
        from squall.outputs import query

        out = query(self._b, stream=stream, flow_id=flow_id, thread_id=thread_id, contains=contains)
        lost = out["not_kept"]
        if lost["chunks"]:
            warnings.warn(
                f"{lost['chunks']} output chunk(s) ({lost['chars']} characters) written after the first 16 MiB "
                "were not kept in the recording",
                SquallWarning,
                stacklevel=2,
            )
        return out["chunks"]

    def find_expr_entry(
        self,
        flow_id: int = 0,
        thread_id: Optional[int] = None,
        identity_val: Any = _UNSET,
        equality_val: Any = _UNSET,
        coord: Optional[tuple] = None,
        file: Optional[str] = None,
        line: Optional[int] = None,
        pred: Optional[Callable[[Any], bool]] = None,
        from_idx: Optional[int] = None,
        backward: bool = False,
    ) -> Optional[dict]:
        """The first ``expr`` entry (from ``from_idx``, forward or ``backward``) matching every filter
        given: its value ``is identity_val``, ``== equality_val`` (an ``__eq__`` that raises counts as
        not equal), its exact source range ``coord`` ``(line, col, end_line, end_col)``, its ``file``
        (full path or a trailing part of it) and ``line``, and ``pred(value)``. With
        ``thread_id=None`` every thread of the flow is searched in order."""
        tests = []
        if identity_val is not _UNSET:
            # A live object is found by its recorded identity; a recorded value (a snapshot
            # from a deref) by its obj_id.
            from squall import _engine

            want = (
                getattr(identity_val, "obj_id", None)
                if hasattr(identity_val, "obj_id")
                else _engine.object_id(identity_val)
            )
            if want:
                tests.append(lambda v: getattr(v, "obj_id", None) == want)
            else:
                tests.append(lambda v: v is identity_val)
        if equality_val is not _UNSET:
            tests.append(lambda v: _safe_eq(v, equality_val))
        if pred is not None:
            tests.append(pred)
        value_pred = (lambda v: all(t(v) for t in tests)) if tests else None
        threads = [thread_id] if thread_id is not None else self._b.all_flows().get(flow_id, [])
        for tid in threads:
            e = self._b.find_expr_entry(flow_id, tid, coord, file, line, value_pred, from_idx, backward, False)
            if e is not None:
                e["thread_id"] = tid
                return e
        return None

    def goto_line(
        self,
        file: str,
        line: int,
        flow_id: int = 0,
        thread_id: Optional[int] = None,
        from_idx: Optional[int] = None,
        backward: bool = False,
    ) -> Optional[dict]:
        """ "Goto file:line": the first entry recorded at ``line`` of ``file`` (a call of a function
        defined there, or an expression, binding, write or return at that line), or None; it
        carries ``thread_id``. From ``from_idx`` on (inclusive), or back from it with
        ``backward``: the next / previous time the line ran. Without ``thread_id`` the flow's
        threads are searched in order. :meth:`line_hits` says where it ran in every thread."""
        for hit in self.line_hits(file, line, flow_id, thread_id, from_idx, backward):
            e = self._b.entry(flow_id, hit["thread_id"], hit["idx"])
            e["thread_id"] = hit["thread_id"]
            return e
        return None

    def line_hits(
        self,
        file: str,
        line: int,
        flow_id: int = 0,
        thread_id: Optional[int] = None,
        from_idx: Optional[int] = None,
        backward: bool = False,
    ) -> List[dict]:
        """Where ``file:line`` ran, per thread of the flow (or ``thread_id`` only) that ran it:
        ``thread_id``, ``idx`` (its first entry there from ``from_idx``, or back from it with
        ``backward``) and ``count`` (how often it ran there). The UI's goto is the same query."""
        return [dict(h) for h in self._b.line_hits(flow_id, thread_id, file, line, from_idx, backward)]

    def writes(
        self,
        obj_id: Optional[int] = None,
        attr_or_key: Any = None,
        type_name: Optional[str] = None,
        flow_id: int = 0,
        thread_id: Optional[int] = None,
        limit: int = 200,
    ) -> dict:
        """Where attributes and items were changed (writes in instrumented code): to the object
        ``obj_id`` (an identity, as values' ``obj_id``), and/or of any object whose recorded
        type is ``type_name`` (``"Item"`` or ``"mod.Item"``), only ``attr_or_key`` (a name or an
        int key) if given. ``{"writes": [...], "total", "shown", "left_out"}``, at most ``limit``
        writes, oldest first in the order they happened across the flow's threads; each has
        ``idx``, ``thread_id``, ``obj_id``, ``name`` (``name_text``: printed by the core's
        printer), ``kind`` ("attr"/"item"), ``fn``,
        ``file``, ``line``, ``coord``, ``deleted``, ``new``, ``old`` and ``old_from``: "previous
        write" (``old_idx`` is its idx, in thread ``old_thread_id``: the write before it in any
        thread), "recorded state"
        (the object's last state recorded before the write), "unknown (not recorded before)" or,
        in a file cut short before it saved what came before, "unknown (not saved: the recording
        was cut short)"."""
        self._warn_if_nothing_recorded()
        if obj_id is None and type_name is None and attr_or_key is None:
            raise ValueError(
                "writes() needs obj_id, type_name or attr_or_key: say which object's or type's "
                "writes to list, e.g. writes(type_name='Item', attr_or_key='price')"
            )
        out = dict(self._b.writes(flow_id, thread_id, obj_id, attr_or_key, type_name, limit))
        for w in out["writes"]:
            w["new"] = self.deref_val_id(w["new_ref"])
            w["old"] = self.deref_val_id(w["old_ref"])
        return out


_live = Queries(_engine.live())

all_flows = _live.all_flows
all_threads = _live.all_threads
flow_threads_info = _live.flow_threads_info
timeline_count = _live.timeline_count
get_referenced_maps_timeline = _live.get_referenced_maps_timeline
timeline_entry = _live.timeline_entry
frame_data = _live.frame_data
stack_for_frame = _live.stack_for_frame
callstack_root_node = _live.callstack_root_node
callstack_node_childs = _live.callstack_node_childs
fn_call_stats = _live.fn_call_stats
find_fn_call_entry = _live.find_fn_call_entry
exceptions = _live.exceptions
exception_text = _live.exception_text
unwind_chain = _live.unwind_chain
bindings = _live.bindings
history = _live.history
find_expr_entry = _live.find_expr_entry
goto_line = _live.goto_line
line_hits = _live.line_hits
power_step = _live.power_step
loop_iterations = _live.loop_iterations
writes = _live.writes
outputs = _live.outputs
total_order_timeline = _live.total_order_timeline


def _safe_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - a user's __eq__ may raise anything
        return False
