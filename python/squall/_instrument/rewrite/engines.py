"""Entry points for an engine passed explicitly (tests, embedders): the prologue of code rewritten
for one binds the ``_sq_*`` names to what ``_entry_points`` returns; what such an engine lacks
falls back to the real engine's wrappers or to plain Python that keeps the program's behaviour."""

import ast
import operator
import threading
from typing import Any, Dict

from .ctx import _default_engine
from .names import ENTRY_NAMES

# Engines passed explicitly (tests, embedders) are reachable from the rewritten code by an int.
_ENGINES: Dict[int, Any] = {}
_ENGINES_LOCK = threading.Lock()


def _passthrough(_site: Any, value: Any) -> Any:
    return value


def _ignore(*_a: Any) -> None:
    return None


def _unwrapped(_site: Any, _form: Any, obj: Any) -> Any:
    return obj


def _loop_unwrapped(_site: Any, obj: Any) -> Any:
    return obj


# The in-place operators of augmented writes, in the operator codes the engine's `waug*` entry
# points take (write_entry.rs `inplace`).
AUG_OPS = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.LShift,
    ast.RShift,
    ast.BitAnd,
    ast.BitOr,
    ast.BitXor,
    ast.MatMult,
)
_AUG_FNS = (
    operator.iadd,
    operator.isub,
    operator.imul,
    operator.itruediv,
    operator.ifloordiv,
    operator.imod,
    operator.ipow,
    operator.ilshift,
    operator.irshift,
    operator.iand,
    operator.ior,
    operator.ixor,
    operator.imatmul,
)


def _py_waugattr(_site: Any, obj: Any, name: str, op: int, operand: Any) -> None:
    setattr(obj, name, _AUG_FNS[op](getattr(obj, name), operand))


def _py_waugitem(_site: Any, obj: Any, key: Any, op: int, operand: Any) -> None:
    obj[key] = _AUG_FNS[op](obj[key], operand)


def _py_wattr(_site: Any, value: Any, obj: Any, name: str) -> Any:
    setattr(obj, name, value)
    return value


def _py_witem(_site: Any, value: Any, obj: Any, key: Any) -> Any:
    obj[key] = value
    return value


def _py_wdelitem(_site: Any, obj: Any, key: Any) -> None:
    del obj[key]


class _PySlot:
    """``WriteSlot`` (write_slot.rs) for an engine without ``wslot``: stores through the engine's
    ``wattr`` / ``witem`` (or its fallback)."""

    __slots__ = ("_site", "_obj", "_key", "_item", "_store")

    def __init__(self, site: Any, obj: Any, key: Any, item: bool, store: Any) -> None:
        for k, v in (("_site", site), ("_obj", obj), ("_key", key), ("_item", item), ("_store", store)):
            object.__setattr__(self, k, v)

    def __setattr__(self, _name: str, value: Any) -> None:
        self._store(self._site, value, self._obj, self._key)

    def __getattr__(self, _name: str) -> Any:
        return self._obj[self._key] if self._item else getattr(self._obj, self._key)


# What a write entry point does for an engine without its own (the store must happen: unlike
# the recording-only entry points, these cannot be ignored).
_WRITE_FALLBACKS = {
    "wattr": _py_wattr,
    "witem": _py_witem,
    "wdelattr": lambda _site, obj, name: delattr(obj, name),
    "wdelitem": _py_wdelitem,
    "waugattr": _py_waugattr,
    "waugitem": _py_waugitem,
    "wsetattr": lambda _site, obj, name, value: setattr(obj, name, value),
}


def _binds_through(bind: Any) -> Any:
    """``binds`` for an engine without its own: its ``bind`` per value, at the sites after the
    first; True, as the engine's (the values' truth is never asked)."""

    def binds(first: int, *values: Any) -> bool:
        for i, v in enumerate(values):
            bind(first + i, v)
        return True

    return binds


def _real_engine_fn(k: str) -> Any:
    try:
        return getattr(_default_engine(), k)
    except (ImportError, AttributeError):
        return None


def _entry_point(eng: Any, k: str) -> Any:
    f = getattr(eng, k, None)
    if k == "bind" and f is not None and f is not _real_engine_fn("bind"):
        # `x = _sq_bind(SITE, v)` needs v back; an explicit engine's bind may return None
        return lambda site, value: (f(site, value), value)[1]
    if f is not None:
        return f
    if k == "recv":
        # an engine without a receiver entry point records receivers as expressions
        return _entry_point(eng, "expr")
    if k in ("expr", "bind"):
        return _passthrough
    if k == "loop_iter":
        # the real engine's iterator, recording through this engine's `bind`
        bind, real = getattr(eng, "bind", None), _real_engine_fn("loop_iter")
        if bind is None or real is None:
            return _loop_unwrapped
        return lambda site, obj: real(site, obj, bind)
    if k in ("async_for", "async_with"):
        # An engine without its own wrappers: the real engine's, recording through this
        # engine's `suspend` / `resume` (or nothing, if there is no real engine).
        suspend, resume = getattr(eng, "suspend", None), getattr(eng, "resume", None)
        try:
            real = getattr(_default_engine(), k)
        except (ImportError, AttributeError):
            return _unwrapped
        if suspend is None or resume is None:
            return _unwrapped
        return lambda site, form, obj: real(site, form, obj, suspend, resume)
    if k == "binds":
        # one `bind` per name, at the sites after the first
        return _binds_through(_entry_point(eng, "bind"))
    if k in _WRITE_FALLBACKS:
        return _WRITE_FALLBACKS[k]
    if k == "wslot":
        wattr, witem = _entry_point(eng, "wattr"), _entry_point(eng, "witem")
        return lambda site, obj, key, item: _PySlot(site, obj, key, item, witem if item else wattr)
    return _ignore


def _entry_points(engine_key: int):
    """Called by the prologue of code rewritten for an explicit engine object."""
    eng = _ENGINES[engine_key]
    return tuple(_entry_point(eng, k) for k in ENTRY_NAMES)


def _engine_key(engine: Any) -> int:
    with _ENGINES_LOCK:
        for k, v in _ENGINES.items():
            if v is engine:
                return k
        k = len(_ENGINES) + 1
        _ENGINES[k] = engine
        return k
