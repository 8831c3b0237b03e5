"""Values as they were when recorded (FlowStorm's ``flow-storm.runtime.values``).

Entries refer to values by *ref* (``fn_args_ref``, ``result_ref``, ``throwable_ref``): opaque ints.
``deref_val_id(ref)`` gives the value back; ``val_pprint(ref, print_level=, print_length=)``
prints it within bounds.

A recording holds nothing of the program: each value is encoded when it is recorded, as it is at
that moment, into squall's own store, reading the object's own storage (no ``__repr__``, no
property, no ``__len__`` or ``__iter__`` of the program runs). What ``deref_val_id`` gives back,
live or from a file (``squall.load``):

- ``None``, bools, ints, floats, complex, ``str`` and ``bytes`` as themselves (a string longer than
  the budget as a :class:`CutStr`);
- ``list``, ``tuple``, ``dict``, ``set`` and ``frozenset`` rebuilt as themselves, their items
  likewise; their subclasses and ``deque`` as :class:`SeqSnapshot` / :class:`MapSnapshot`;
- any other object as an :class:`ObjectSnapshot`: its type name, its identity (``obj_id``: the
  same object recorded twice has the same id) and its recorded fields as attributes.

The encoding is bounded by a budget (``get_snapshot_budget()``): nesting levels, items per
container, nodes per value, characters per string; what it cuts is a :class:`Truncated` marker
(or a container shorter than its recorded ``len``).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from squall import _engine
from squall._materialize import MaterializeError

__all__ = [
    "CutBytes",
    "Earlier",
    "MaterializeError",
    "CutStr",
    "MapSnapshot",
    "ObjectSnapshot",
    "SeqSnapshot",
    "Truncated",
    "deref_val_id",
    "get_snapshot_budget",
    "materialize",
    "materialize_value",
    "register_snapshot",
    "safe_repr",
    "set_snapshot_budget",
    "val_pprint",
]


class Truncated:
    """Stands where the recording's budget cut a value: ``omitted`` items of a ``type_name`` of
    ``length`` items were left out (``omitted == 0``: the whole value was beyond the depth).
    ``obj_id`` is the cut object's identity (0: none)."""

    __slots__ = ("type_name", "length", "omitted", "obj_id")

    def __init__(self, type_name: str, length: int, omitted: int, obj_id: int = 0) -> None:
        self.type_name = type_name
        self.length = length
        self.omitted = omitted
        self.obj_id = obj_id

    def __repr__(self) -> str:
        if self.omitted:
            return f"<...{self.omitted} more of {self.type_name}[{self.length}]: cut by squall's snapshot budget>"
        return f"<{self.type_name}[{self.length}]: deeper than squall's snapshot budget>"


class CutStr(str):
    """A string longer than the recording's budget: its first characters, and ``length``, the
    length it had."""

    length: int

    def __new__(cls, prefix: str, length: int) -> CutStr:
        s = super().__new__(cls, prefix)
        s.length = length
        return s

    def __repr__(self) -> str:
        return f"{str.__repr__(self)}...<{self.length - len(self)} more chars>"


class CutBytes(bytes):
    """A bytes value longer than the recording's budget: its first bytes, and ``length``."""

    length: int

    def __new__(cls, prefix: bytes, length: int) -> CutBytes:
        s = super().__new__(cls, prefix)
        s.length = length
        return s

    def __repr__(self) -> str:
        return f"{bytes.__repr__(self)}...<{self.length - len(self)} more bytes>"


class ObjectSnapshot:
    """An object as it was recorded: its type name (``module.QualName``), its identity
    (``obj_id``, stable across entries; 0 for none), squall's repr of it
    (``Item#12(name='a', price=3)``; never the program's ``__repr__``), and its recorded fields
    (instance dict, slots, an exception's ``args``), readable as attributes: ``snap.total``."""

    __slots__ = ("type_name", "repr_text", "attrs", "obj_id")

    def __init__(self, type_name: str, repr_text: str, attrs: dict, obj_id: int = 0) -> None:
        object.__setattr__(self, "type_name", type_name)
        object.__setattr__(self, "repr_text", repr_text)
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "obj_id", obj_id)

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "attrs")[name]
        except KeyError:
            raise AttributeError(
                f"the recorded {self.type_name} has no attribute {name!r} (recorded: {sorted(self.attrs)})"
            ) from None

    def __repr__(self) -> str:
        return self.repr_text

    def __str__(self) -> str:
        text = self.attrs.get("__str__")
        if isinstance(text, str):
            return text
        args = self.attrs.get("args")
        if isinstance(args, tuple):
            # An exception: what str(exc) says for the usual constructors (KeyError quotes).
            if len(args) == 1:
                return repr(args[0]) if self.type_name == "KeyError" else str(args[0])
            return str(args) if args else ""
        return self.repr_text

    def __eq__(self, other: object) -> bool:
        """Same type and same recorded fields (identity aside)."""
        if not isinstance(other, ObjectSnapshot):
            return NotImplemented
        return (self.type_name, self.attrs) == (other.type_name, other.attrs)

    __hash__ = None  # type: ignore[assignment]


class SeqSnapshot(list):
    """A sequence of a type that is not rebuilt (``deque``, a list subclass...): its items in a
    list, with the recorded ``type_name`` and identity ``obj_id``."""

    def __init__(self, type_name: str, items: list, obj_id: int = 0) -> None:
        super().__init__(items)
        self.type_name = type_name
        self.obj_id = obj_id

    def __repr__(self) -> str:
        return f"{self.type_name}({list.__repr__(self)})"


class MapSnapshot(dict):
    """A mapping of a type that is not rebuilt (``defaultdict``, ``Counter``...): its items in
    a dict, with the recorded ``type_name`` and identity ``obj_id``."""

    def __init__(self, type_name: str, items: dict, obj_id: int = 0) -> None:
        super().__init__(items)
        self.type_name = type_name
        self.obj_id = obj_id

    def __repr__(self) -> str:
        return f"{self.type_name}({dict.__repr__(self)})"


class Earlier:
    """An object that was not encoded at this moment (deeper than the recording's
    ``object_depth``, see :func:`set_snapshot_budget`), standing with the newest state of it
    recorded *before*: ``value``. It may have changed since, so it is never shown as this
    moment's. Reading through it (attributes, items, ``len``, iteration) reads ``value``;
    ``obj_id`` is the object's identity, ``history(obj_id)`` lists its recorded states.
    ``idx`` is the entry the state is as of (the last recorded write applied to it, else the
    entry that recorded it; ``None`` when the recording no longer holds that entry)."""

    __slots__ = ("value", "type_name", "obj_id", "slot", "idx")

    def __init__(self, value: Any, type_name: str, obj_id: int, slot: int, idx: Optional[int] = None) -> None:
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "type_name", type_name)
        object.__setattr__(self, "obj_id", obj_id)
        object.__setattr__(self, "slot", slot)
        object.__setattr__(self, "idx", idx)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "value"), name)

    def __getitem__(self, key: Any) -> Any:
        return self.value[key]

    def __len__(self) -> int:
        return len(self.value)

    def __bool__(self) -> bool:
        # Without it, truth falls back on `__len__`, which an object's snapshot has not.
        return bool(self.value)

    def __iter__(self) -> Any:
        return iter(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Earlier):
            return self.value == other.value
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"(earlier) {safe_repr(self.value)}"


def deref_val_id(value_ref: Optional[int]) -> Any:
    """The value a ref names, as it was recorded. ``None`` refs (no value recorded) give None.

    ``fn_args_ref`` of an ``fn-call`` derefs to the list of the call's arguments in parameter
    order (``*args`` as one tuple, ``**kwargs`` as one dict); a resumed generator/coroutine
    segment's args are ``[sent_value]``.
    """
    if value_ref is None:
        return None
    if not isinstance(value_ref, int) or isinstance(value_ref, bool):
        raise TypeError(f"deref_val_id expects a value ref (an int from an entry's `*_ref` key), got {value_ref!r}")
    return _engine.live().deref(value_ref)


def materialize(value_ref: Optional[int]) -> Any:
    """Real objects rebuilt from the value a ref names, to re-run a call with its recorded
    arguments: ``fn(*materialize(call["fn_args_ref"]))``. :func:`materialize_value` does the same
    for a value :func:`deref_val_id` already gave.

    Instances of the recorded classes are made with ``cls.__new__`` and given their recorded
    fields (``__init__`` is not called, nor a class's own ``__setattr__``); builtin containers
    and their subclasses with their items; objects recorded with the same identity become one
    object (shared references and cycles as they were). Importing the classes' modules is the one
    step that runs program code. An earlier state (:class:`Earlier`) is used as it is. Raises
    :class:`MaterializeError`, naming where, for what cannot be rebuilt: a value the budget cut,
    a function or C object recorded by name, a class that cannot be imported."""
    return materialize_value(deref_val_id(value_ref))


def materialize_value(value: Any) -> Any:
    """:func:`materialize` of a value :func:`deref_val_id` (or ``Recording.deref_val_id``) gave."""
    from squall._materialize import materialize_value as build

    return build(value, sys.modules[__name__])


def safe_repr(value: Any, max_chars: int = 10_000) -> str:
    """``repr(value)``, or a description of why it failed. Never raises."""
    try:
        text = repr(value)
    except BaseException as e:  # noqa: BLE001 - a repr may raise anything
        tp = type(value)
        return f"<{tp.__module__}.{tp.__qualname__} object; repr raised {type(e).__name__}: {e}>"
    if not isinstance(text, str):
        return f"<{type(value).__qualname__} object; repr returned {type(text).__name__}>"
    if len(text) > max_chars:
        return text[:max_chars] + f"...<{len(text) - max_chars} more chars>"
    return text


def val_pprint(
    value_ref: Optional[int],
    print_level: Optional[int] = None,
    print_length: Optional[int] = None,
    width: int = 100,
) -> str:
    """The recorded value printed within bounds, like Clojure's ``*print-level*`` and
    ``*print-length*``: containers nested deeper than ``print_level`` print as ``...``, and only the
    first ``print_length`` items of each container are printed, followed by ``...``. Objects print
    their recorded fields within the same bounds. Printed by the core's printer
    (``crates/squall_trace/src/printer.rs``), the one the UI's value inspector uses. ``width``
    is accepted for FlowStorm's signature and not used (one line)."""
    return pprint_ref(_engine.live(), value_ref, print_level, print_length)


def pprint_ref(
    recording: Any, value_ref: Optional[int], print_level: Optional[int], print_length: Optional[int]
) -> str:
    """``val_pprint`` of a ref of ``recording`` (an ``_engine.Recording``), its arguments checked."""
    if value_ref is None:
        return "None"
    if not isinstance(value_ref, int) or isinstance(value_ref, bool):
        raise TypeError(f"val_pprint expects a value ref (an int from an entry's `*_ref` key), got {value_ref!r}")
    for name, bound in (("print_level", print_level), ("print_length", print_length)):
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool) or bound < 0):
            raise ValueError(f"val_pprint: {name} must be None (no bound) or an int >= 0, got {bound!r}")
    return recording.val_pprint(value_ref, print_level, print_length)


def pformat(value: Any, print_level: Optional[int] = None, print_length: Optional[int] = None, width: int = 100) -> str:
    """Formats a Python value with the same bounds as :func:`val_pprint`: for values that are not
    a recorded ref, like the DAP server's evaluated expressions and their children
    (``squall.agent.preview``). A recorded value is printed from its ref by the core's printer
    (:func:`val_pprint`, ``Recording.val_pprint``): the call tree text, the agents' answers, the
    DAP server's variables and the UI all do."""
    return _Printer(print_level, print_length).fmt(value, 0, set())


class _Printer:
    def __init__(self, level: Optional[int], length: Optional[int]) -> None:
        self.level = level
        self.length = length

    def fmt(self, v: Any, depth: int, active: set) -> str:
        kind = _container_kind(v)
        if kind is None:
            return safe_repr(v)
        if id(v) in active:
            return _ELLIPSIS[kind]
        if self.level is not None and depth >= self.level:
            return _ELLIPSIS[kind]
        active.add(id(v))
        try:
            parts, more = self.items(v, kind, depth, active)
        finally:
            active.discard(id(v))
        if more:
            parts.append("...")
        if kind == "tuple" and len(parts) == 1:
            return f"({parts[0]},)"
        if kind == "set" and not parts:
            body = "set()"
        else:
            open_, close = _BRACKETS[kind]
            body = f"{open_}{', '.join(parts)}{close}"
        if type(v) in (list, tuple, dict, set):
            return body
        return f"{getattr(v, 'type_name', type(v).__name__)}({body})"

    def items(self, v: Any, kind: str, depth: int, active: set) -> tuple[list, bool]:
        parts: list = []
        source = v.items() if kind == "dict" else v
        try:
            for item in source:
                if self.length is not None and len(parts) >= self.length:
                    return parts, True
                if kind == "dict":
                    k, x = item
                    parts.append(f"{self.fmt(k, depth + 1, active)}: {self.fmt(x, depth + 1, active)}")
                else:
                    parts.append(self.fmt(item, depth + 1, active))
        except Exception as e:  # noqa: BLE001 - a container whose iteration raises
            parts.append(f"<iteration raised {type(e).__name__}: {e}>")
        return parts, False


_ELLIPSIS = {"list": "[...]", "tuple": "(...)", "dict": "{...}", "set": "{...}"}
_BRACKETS = {"list": "[]", "tuple": "()", "dict": "{}", "set": "{}"}


def _container_kind(v: Any) -> Optional[str]:
    if isinstance(v, dict):
        return "dict"
    if isinstance(v, list):
        return "list"
    if type(v) is tuple:
        return "tuple"
    if isinstance(v, (set, frozenset)):
        return "set"
    return None


def register_snapshot(tp: type, fn: Callable[[Any], Any]) -> None:
    """Records values of exactly type ``tp`` as ``fn(value)`` (called at record time, with
    recording paused: the one place where squall runs the program's code, because you asked).
    FlowStorm's ``SnapshotP``."""
    if not isinstance(tp, type):
        raise TypeError(f"register_snapshot expects a type, got {tp!r}")
    if not callable(fn):
        raise TypeError(f"register_snapshot expects a callable snapshot function, got {fn!r}")
    _engine.register_snapshot(tp, fn)


def set_snapshot_budget(
    max_depth: int = 5,
    max_length: int = 100,
    max_items: int = 1000,
    max_string: int = 1000,
    object_depth: int = 1,
) -> None:
    """How much of a value is encoded when recorded: nesting levels, items per container, nodes
    per recorded value (all levels together), characters per string (bytes per bytes object),
    and ``object_depth``: levels of objects with an identity (containers, instances) encoded
    afresh. Deeper, an object this timeline already recorded is kept as a reference to it, and
    shown with its newest earlier state and the writes recorded since, marked as earlier
    (:class:`Earlier`). An expression's value is encoded one level less (``object_depth - 1``,
    so at the default an expression's object recorded before is such a reference), arguments,
    returns and bindings ``object_depth`` levels. ``object_depth=0``: the recorded value itself
    is such a reference when it is an instance recorded before (an argument, a binding, a
    return): the fastest setting on object-heavy programs (docs/benchmarks.md, "Tenth
    session"); ``squall run --object-depth N`` sets it for a run."""
    _engine.set_snapshot_budget(max_depth, max_length, max_items, max_string, object_depth)


def get_snapshot_budget() -> dict:
    return dict(_engine.get_snapshot_budget())
