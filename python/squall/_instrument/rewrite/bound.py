"""Entry points bound to their form or site, held as constants of the rewritten code, and the
call of an entry point every pass inserts (``_entry_call``)."""

import ast
import threading
import types
import warnings
from typing import Any, Dict, List, Optional, Tuple

from .ctx import _default_engine
from .names import ENTRY_NAMES
from .nodes import _const, _name

# for ``_sq_expr(12, v)``): the engine's entry point bound to that id (``_engine.bound_entry``),
# held as a constant of the code that calls it. It saves passing the id and loading a global,
# and ret/expr/bind take CPython's fastest builtin call (``METH_O``); the write entry points are
# bound to their sites too (``<witem 12>(v, o, k)``). No namespace sees them
# (builtins past ~600 extra names would cost NameError its "Did you mean" hint).
#
# The tree carries a placeholder constant (a frozenset, which source cannot spell and marshal
# can keep: the code cache stores code with placeholders); ``bind_entry_constants`` puts the
# callables in after ``compile``. Only for the real engine (explicit engines get plain calls).
_BOUND_ENTRIES = (
    "call",
    "ret",
    "expr",
    "bind",
    "wattr",
    "witem",
    "wdelattr",
    "wdelitem",
    "waugattr",
    "waugitem",
    "wsetattr",
    "wslot",
    "binds",
    "suspend",
    "resume",
    "recv",
)
_PLACEHOLDER_TAG = "\x00squall-entry"
_bound = threading.local()
_bound_entries: Dict[Tuple[str, int], Any] = {}
_compile_lock = threading.Lock()


class BoundSite(int):
    """The form or site id a bound entry point is bound to (its ``__self__``). Pickle rebuilds a
    bound entry point as ``getattr(its_self, "expr")``, so code holding them pickles by value
    (cloudpickle) and unpickles to the same entry points."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name in _BOUND_ENTRIES:
            return _bound_entry(name, int(self))
        raise AttributeError(name)

    def __reduce__(self) -> Any:
        return (BoundSite, (int(self),))


def _placeholder(entry: str, id_: int) -> frozenset:
    return frozenset({(_PLACEHOLDER_TAG, entry, id_)})


def _placeholder_entry(k: Any) -> Optional[Tuple[str, int]]:
    """(entry, id) if constant ``k`` is an entry point placeholder."""
    if type(k) is frozenset and len(k) == 1:
        (item,) = k
        if type(item) is tuple and len(item) == 3 and item[0] == _PLACEHOLDER_TAG:
            return item[1], item[2]
    return None


# The id of a placeholder for an entry point that is not bound to a site (``unwind``, loops,
# ``async with``...): the constant is the engine's own entry point, called with all its arguments. Held as a constant rather than loaded as the ``_sq_*``
# builtin: at interpreter shutdown CPython restores the builtins it started with before it
# closes the generators still suspended in modules, and the unwind handler of such a generator
# must still find its entry point (a builtin would be gone: NameError printed into stderr).
UNBOUND = -1


def _bound_entry(entry: str, id_: int) -> Any:
    if id_ == UNBOUND:
        return getattr(_default_engine(), entry)
    f = _bound_entries.get((entry, id_))
    if f is None:
        f = _bound_entries[(entry, id_)] = _default_engine().bound_entry(entry, BoundSite(id_))
    return f


def bind_entry_constants(code: types.CodeType) -> types.CodeType:
    """``code`` (and the code nested in it) with each entry point placeholder replaced by the
    engine's entry point bound to its id."""
    consts = []
    changed = False
    for k in code.co_consts:
        new = k
        if isinstance(k, types.CodeType):
            new = bind_entry_constants(k)
        else:
            entry = _placeholder_entry(k)
            if entry is not None:
                new = _bound_entry(*entry)
        changed = changed or new is not k
        consts.append(new)
    return code.replace(co_consts=tuple(consts)) if changed else code


def compile_tree(tree: ast.AST, filename: str, mode: str = "exec", flags: int = 0) -> types.CodeType:
    """``compile`` for an instrumented tree, placeholders still in (what the code cache keeps):
    without the compiler's warning that a (placeholder) constant is called."""
    with _compile_lock, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="'frozenset' object is not callable", category=SyntaxWarning)
        return compile(tree, filename, mode, flags, dont_inherit=True)


def _entry_call(entry: str, args: List[ast.expr], at: ast.AST) -> ast.Call:
    func: ast.expr = _name(ENTRY_NAMES[entry], at)
    if not getattr(_bound, "on", False):
        pass  # an explicit engine: its entry points are module globals
    elif entry in _BOUND_ENTRIES and args and isinstance(args[0], ast.Constant) and type(args[0].value) is int:
        func = _const(_placeholder(entry, args[0].value), at)
        args = args[1:]
    else:
        func = _const(_placeholder(entry, UNBOUND), at)
    c = ast.copy_location(ast.Call(func=func, args=args, keywords=[]), at)
    c._sq_entry = entry  # type: ignore[attr-defined]  # inserted by squall: the full pass skips it
    return c
