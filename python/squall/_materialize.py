"""Rebuilding real objects from recorded values (``squall.values.materialize``).

A recorded value is a snapshot: type names and fields, not the program's objects. To re-run a call
with its recorded arguments, ``materialize`` makes new instances of the recorded classes and fills
in their recorded fields, without calling ``__init__`` (it may have side effects or need other
arguments): ``cls.__new__(cls)`` then the fields, set as ``object.__setattr__`` would (a class's own
``__setattr__`` is not run). Objects recorded with the same identity become one object, so shared
references and cycles come back as they were.

It imports the module each class was defined in (``module.QualName``): the one step that runs the
program's code, because it is asked for. What cannot be rebuilt faithfully raises
:class:`MaterializeError` naming where: a value the budget cut (``Truncated``, ``CutStr``,
``CutBytes``), an object known only by its name (a function, a C object), a class that is gone.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict

__all__ = ["MaterializeError", "materialize_value"]


#: Objects the recorder keeps by name (functions, modules, code): nothing to rebuild them from.
_BY_NAME_ONLY = {"function", "method", "builtin_function_or_method", "module", "code"}


class MaterializeError(ValueError):
    """A recorded value that cannot be rebuilt as a real object; ``path`` says where in it."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"cannot rebuild the recorded value at {path or 'its top'}: {why}")
        self.path = path
        self.why = why


def _find_class(type_name: str, path: str) -> type:
    # `module.QualName`, where both parts may be dotted (a package, a nested class): try each
    # split, longest module first; a name without a module is a builtin.
    parts = type_name.split(".")
    splits = [(".".join(parts[:cut]), parts[cut:]) for cut in range(len(parts) - 1, 0, -1)]
    for mod_name, attrs in splits or [("builtins", parts)]:
        try:
            obj: Any = importlib.import_module(mod_name)
            for attr in attrs:
                obj = getattr(obj, attr)
        except (ImportError, AttributeError):
            continue
        if isinstance(obj, type):
            return obj
    raise MaterializeError(path, f"class `{type_name}` cannot be imported (is its module importable here?)")


class _Builder:
    def __init__(self, values: Any) -> None:
        # squall.values, passed in by the caller: values imports this module, not the reverse
        self.v = values
        # Recorded identity -> the object rebuilt for it (shared references, cycles).
        self.made: Dict[int, Any] = {}

    def build(self, x: Any, path: str) -> Any:
        v = self.v
        if isinstance(x, v.Earlier):
            return self.build(x.value, path)
        if isinstance(x, v.Truncated):
            if x.omitted == 0 and x.obj_id in self.made:
                return self.made[x.obj_id]  # a cycle back to an object being rebuilt
            raise MaterializeError(path, f"{x!r} (raise the budget with values.set_snapshot_budget)")
        if isinstance(x, (v.CutStr, v.CutBytes)):
            raise MaterializeError(path, f"a {type(x).__name__} of {x.length} recorded only in part")
        if isinstance(x, v.ObjectSnapshot):
            return self.instance(x, path)
        if isinstance(x, v.SeqSnapshot):
            return self.sequence(x, path)
        if isinstance(x, v.MapSnapshot):
            return self.mapping(x, path)
        if type(x) is list:
            return [self.build(i, f"{path}[{n}]") for n, i in enumerate(x)]
        if type(x) is tuple:
            return tuple(self.build(i, f"{path}[{n}]") for n, i in enumerate(x))
        if type(x) is dict:
            return {self.build(k, f"{path} key {k!r}"): self.build(i, f"{path}[{k!r}]") for k, i in x.items()}
        if type(x) in (set, frozenset):
            return type(x)(self.build(i, f"{path} item") for i in x)
        return x  # None, bools, numbers, str, bytes: themselves

    def instance(self, snap: Any, path: str) -> Any:
        if snap.obj_id and snap.obj_id in self.made:
            return self.made[snap.obj_id]
        if snap.type_name in _BY_NAME_ONLY:
            raise MaterializeError(path, f"`{snap!r}` was recorded by its name only")
        cls = _find_class(snap.type_name, path)
        attrs = dict(snap.attrs)
        if issubclass(cls, BaseException):
            args = self.build(attrs.pop("args", ()), f"{path}.args")
            obj = cls.__new__(cls, *args)
            obj.args = args
        elif "value" in attrs and issubclass(cls, (int, float, str, bytes, bytearray)):
            obj = cls.__new__(cls, self.build(attrs.pop("value"), f"{path}.value"))
        else:
            try:
                obj = cls.__new__(cls)
            except TypeError as e:
                raise MaterializeError(path, f"`{snap.type_name}.__new__` needs arguments ({e})") from None
        if snap.obj_id:
            self.made[snap.obj_id] = obj
        for name, value in attrs.items():
            rebuilt = self.build(value, f"{path}.{name}")
            try:
                object.__setattr__(obj, name, rebuilt)
            except (AttributeError, TypeError) as e:
                raise MaterializeError(f"{path}.{name}", f"cannot be set on a new `{snap.type_name}` ({e})") from None
        return obj

    def sequence(self, snap: Any, path: str) -> Any:
        if snap.obj_id and snap.obj_id in self.made:
            return self.made[snap.obj_id]
        cls = _find_class(snap.type_name, path)
        items = list(snap)
        obj = cls.__new__(cls)
        if snap.obj_id:
            self.made[snap.obj_id] = obj
        rebuilt = [self.build(i, f"{path}[{n}]") for n, i in enumerate(items)]
        for base in (list, set):
            if isinstance(obj, base):
                base.__init__(obj, rebuilt)  # type: ignore[misc]
                return obj
        try:
            cls.__init__(obj, rebuilt)  # deque and other sequences take their items
        except TypeError as e:
            raise MaterializeError(path, f"a `{snap.type_name}` cannot be made from its items ({e})") from None
        return obj

    def mapping(self, snap: Any, path: str) -> Any:
        if snap.obj_id and snap.obj_id in self.made:
            return self.made[snap.obj_id]
        cls = _find_class(snap.type_name, path)
        obj = cls.__new__(cls)
        if snap.obj_id:
            self.made[snap.obj_id] = obj
        if hasattr(obj, "default_factory"):
            obj.default_factory = None  # a defaultdict's factory is not recorded
        # The class's own item store: an OrderedDict keeps its order beside the dict's table.
        setitem = type(obj).__setitem__
        for k, i in dict.items(snap):
            setitem(obj, self.build(k, f"{path} key {k!r}"), self.build(i, f"{path}[{k!r}]"))
        return obj


def materialize_value(value: Any, values: Any) -> Any:
    """New real objects for recorded ``value`` (a derefed value); see the module doc. ``values``:
    the ``squall.values`` module (its value classes)."""
    return _Builder(values).build(value, "")
