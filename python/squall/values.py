"""Values as they were when recorded (FlowStorm's ``flow-storm.runtime.values``).

Entries refer to values by *ref* (``fn_args_ref``, ``result_ref``, ``throwable_ref``): opaque ints.
``deref_val_id(ref)`` gives the value back; ``val_pprint(ref, print_level=, print_length=)``
prints it within bounds and never raises because of the value (a ``repr`` that raises is shown as
such).

Snapshots: mutable builtins (``list``, ``dict``, ``set``, ``bytearray``; tuples holding them) are
copied when recorded, so a value shows what it was at that moment even if the program mutated it
later. The copy is bounded by a budget (``get_snapshot_budget()``): what it cuts is replaced by a
:class:`Truncated` marker. Subclasses of those and ``collections.deque`` are copied shallowly
(``copy.copy``); other objects are kept by reference unless you register a snapshot function for
their type with :func:`register_snapshot`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import weakref

from squall import _engine

__all__ = [
    "MapSnapshot",
    "ObjectSnapshot",
    "SeqSnapshot",
    "Truncated",
    "deref_val_id",
    "get_snapshot_budget",
    "register_snapshot",
    "safe_repr",
    "set_snapshot_budget",
    "val_pprint",
]


class Truncated:
    """Stands where a snapshot budget cut a value: ``omitted`` items of a ``type_name`` of
    ``length`` items were left out (``omitted == 0``: the whole value was beyond the depth)."""

    __slots__ = ("type_name", "length", "omitted")

    def __init__(self, type_name: str, length: int, omitted: int) -> None:
        self.type_name = type_name
        self.length = length
        self.omitted = omitted

    def __repr__(self) -> str:
        if self.omitted:
            return f"<...{self.omitted} more of {self.type_name}[{self.length}]: cut by squall's snapshot budget>"
        return f"<{self.type_name}[{self.length}]: deeper than squall's snapshot budget>"


_engine.set_truncation_marker(Truncated)


class ClassRef:
    """How the recorder keeps a class the program defined: by weak reference, so that recording
    it (``cls`` of a classmethod, a class passed around) does not keep it alive — which the
    program could notice (``__subclasses__()``, weakref callbacks). ``deref_val_id`` gives the
    class itself, or an :class:`ObjectSnapshot` naming it once it was collected."""

    __slots__ = ("_ref", "name")

    def __init__(self, cls: type) -> None:
        self._ref = weakref.ref(cls)
        self.name = f"{cls.__module__}.{cls.__qualname__}"

    def resolve(self) -> Any:
        cls = self._ref()
        if cls is not None:
            return cls
        return ObjectSnapshot("type", f"<class '{self.name}'> (collected since it was recorded)", {})




class ObjectSnapshot:
    """An object as a recording file keeps it: its type name, its repr when saved, and its
    attributes (snapshots themselves), readable as attributes: ``snap.total``."""

    __slots__ = ("type_name", "repr_text", "attrs")

    def __init__(self, type_name: str, repr_text: str, attrs: dict) -> None:
        object.__setattr__(self, "type_name", type_name)
        object.__setattr__(self, "repr_text", repr_text)
        object.__setattr__(self, "attrs", attrs)

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
        return text if isinstance(text, str) else self.repr_text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectSnapshot):
            return NotImplemented
        return (self.type_name, self.repr_text, self.attrs) == (other.type_name, other.repr_text, other.attrs)

    __hash__ = None  # type: ignore[assignment]


class SeqSnapshot(list):
    """A sequence of a type that is not rebuilt from a file (``deque``, a list subclass...): its
    items in a list, with the recorded ``type_name``."""

    def __init__(self, type_name: str, items: list) -> None:
        super().__init__(items)
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"{self.type_name}({list.__repr__(self)})"


class MapSnapshot(dict):
    """A mapping of a type that is not rebuilt from a file (``defaultdict``, ``Counter``...):
    its items in a dict, with the recorded ``type_name``."""

    def __init__(self, type_name: str, items: dict) -> None:
        super().__init__(items)
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"{self.type_name}({dict.__repr__(self)})"


def deref_val_id(value_ref: Optional[int]) -> Any:
    """The value a ref names, as it was recorded. ``None`` refs (no value recorded) give None.

    ``fn_args_ref`` of an ``fn-call`` derefs to the list of the call's arguments in parameter
    order (``*args`` as one tuple, ``**kwargs`` as one dict); a resumed generator/coroutine
    segment's args are ``[sent_value]``.
    """
    if value_ref is None:
        return None
    if not isinstance(value_ref, int) or isinstance(value_ref, bool):
        raise TypeError(
            f"deref_val_id expects a value ref (an int from an entry's `*_ref` key), got {value_ref!r}"
        )
    return _engine.deref(value_ref)


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
    first ``print_length`` items of each container are printed, followed by ``...``."""
    return pformat(deref_val_id(value_ref), print_level=print_level, print_length=print_length, width=width)


def pformat(
    value: Any, print_level: Optional[int] = None, print_length: Optional[int] = None, width: int = 100
) -> str:
    """Formats a live value with the same bounds as :func:`val_pprint`."""
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

    def items(self, v: Any, kind: str, depth: int, active: set) -> "tuple[list, bool]":
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
    recording paused). FlowStorm's ``SnapshotP``."""
    if not isinstance(tp, type):
        raise TypeError(f"register_snapshot expects a type, got {tp!r}")
    if not callable(fn):
        raise TypeError(f"register_snapshot expects a callable snapshot function, got {fn!r}")
    _engine.register_snapshot(tp, fn)


def set_snapshot_budget(max_depth: int = 5, max_length: int = 1000, max_items: int = 10_000) -> None:
    """How much of a mutable value is copied when recorded: nesting levels, items per container,
    items in all."""
    _engine.set_snapshot_budget(max_depth, max_length, max_items)


def get_snapshot_budget() -> dict:
    return dict(_engine.get_snapshot_budget())



_engine.set_class_ref(ClassRef)
