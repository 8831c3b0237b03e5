"""The source rewriter: turns a module's source into an instrumented ``ast.Module``.

Passes run in order over the tree (``_MODE_PASSES``), each a function ``(tree, ctx) -> None``:
``qualnames.py`` (pass 0, always), ``calls.py`` (pass 1, both modes: every
``def``/``async def``/``lambda`` reports its call, its returns, its unwinding by an exception,
and (generators, coroutines) each suspension and resumption) and ``full.py`` (pass 2, full mode:
expressions, bindings, writes; its halves in ``full_exprs.py`` and ``full_stmts.py``, the calls
they insert in ``full_entries.py``); then ``prologue.py`` puts the statement that makes the entry
points reachable at the top. ``bound.py``: entry points bound to their site, as code constants;
``engines.py``: entry points of an engine passed explicitly; ``scopes.py``: scope analyses.

Shape of a rewritten function::

    def f(a, b=1, *args, c, **kw):
        '''docstring stays first'''
        _sq_call(FORM, a, b, args, c, kw)
        try:
            ...                       # `return X` -> `return _sq_ret(SITE, X)`
            return _sq_ret(SITE_END, None)     # only if the body can fall off its end
        except BaseException as _sq_exc:
            _sq_unwind(FORM, _sq_exc)
            raise

Inside an ``async def``, the implicit awaits of ``async for`` (each ``__anext__()``), of ``async
with`` (``__aenter__()``, ``__aexit__()``) and of async comprehensions are suspensions too: the
async iterable / context manager is wrapped, ``async for x in _sq_afor(SITE, FORM, it)``,
``async with _sq_awith(SITE, FORM, cm)``, by the engine's C wrappers
(crates/squall_python/src/recorder/awaiting.rs), which record ``suspend`` / ``resume`` around each of
those awaits (none when the awaitable runs recorded code inside the frame: delegation.rs) and leave
every behaviour, error message and traceback as CPython's.

Full mode records a single-name binding with the call that makes its value: ``x = _sq_bind(SITE,
v)`` (bind hands v back) and ``for x in _sq_for(SITE, it)`` (the engine's iterator,
crates/squall_python/src/recorder/loop_iter.rs, records each item as it hands it to the loop; before 3.12
only, see ``_LOOP_ITER``), one call fewer per assignment or iteration than ``x = v`` followed by
``_sq_bind(SITE, x)``. The names one statement binds together (``a, b = t``, ``for k, v in it``,
``with cm() as (a, b)``, a comprehension's ``for k, v in it``) are recorded by one call,
``_sq_binds(SITE, a, b)``, their sites consecutive (``SITE``, ``SITE + 1``): the entries a
``_sq_bind`` per name made, one call instead of one per name (nbody binds ten names per pair).

With the real engine (no explicit ``engine``), ``_sq_call(FORM, ...)``, ``_sq_ret(SITE, v)``,
``_sq_expr(SITE, v)``, ``_sq_bind(SITE, v)``, ``_sq_binds(SITE, ...)``, ``_sq_suspend(SITE, v)``,
``_sq_resume(FORM, sent)`` and the writes become calls of a constant: the engine's entry point
bound to that form or site (``_engine.bound_entry``, ``bind_entry_constants``). Same entries;
one argument and one global load fewer per event, and ret/expr/bind/suspend/resume are
``METH_O`` calls. No namespace changes (``_BOUND_ENTRIES``).

Every original node keeps its location; inserted nodes take the location of the statement they
stand next to, so tracebacks keep their files and lines.
"""

import ast
import types
from typing import Any, Optional, Union

from .bound import UNBOUND, BoundSite, _bound, _placeholder_entry, bind_entry_constants, compile_tree
from .calls import _calls_pass
from .ctx import _Ctx, _default_engine
from .engines import AUG_OPS, _entry_points
from .full import _full_pass
from .full_entries import _LOOP_ITER
from .names import ENTRY_NAMES, EXC_NAME
from .nodes import _name
from .prologue import _install_builtins, _prologue, _prologue_index
from .qualnames import _Qualnames

# `_install_builtins` and `_entry_points` are called by name from the prologue of rewritten code
# (`__import__("squall._instrument.rewrite", fromlist=["_"])._install_builtins()`), code caches
# included: they stay reachable here.
__all__ = [
    "instrument_source",
    "compile_instrumented",
    "instrument_tree",
    "instrumented_source_text",
    "ENTRY_NAMES",
    "EXC_NAME",
    "MODES",
    "AUG_OPS",
    "BoundSite",
    "bind_entry_constants",
    "compile_tree",
    "_install_builtins",
    "_entry_points",
    "_prologue",
    "_Ctx",
    "_LOOP_ITER",
]

MODES = ("full", "calls")

# Passes per mode, run in order on the tree.
_MODE_PASSES = {"calls": [_calls_pass], "full": [_calls_pass, _full_pass]}

# The default mode's passes (kept for callers that look at it).
_PASSES = _MODE_PASSES["full"]


def instrument_tree(
    tree: Union[ast.Module, ast.Interactive],
    filename: str,
    module_name: str,
    engine: Any = None,
    mode: Optional[str] = None,
) -> Union[ast.Module, ast.Interactive]:
    """Instruments a parsed module (or an interactive input) in place and returns it.
    ``mode``: "full" (calls, expressions, bindings) or "calls"; None: the config's mode for
    ``module_name`` (``squall.config.current().mode_for``)."""
    if mode is None:
        mode = _configured_mode(module_name)
    if mode not in _MODE_PASSES:
        raise ValueError("squall: unknown instrumentation mode %r; expected full or calls" % (mode,))
    explicit = engine is not None
    ctx = _Ctx(engine if explicit else _default_engine(), filename, module_name)
    _Qualnames().visit(tree)
    was_bound = getattr(_bound, "on", False)
    _bound.on = not explicit
    try:
        for p in _MODE_PASSES[mode]:
            p(tree, ctx)
    finally:
        _bound.on = was_bound
    body = tree.body
    i = _prologue_index(body) if isinstance(tree, ast.Module) else 0
    at = body[i] if i < len(body) else (body[-1] if body else ast.Pass(lineno=1, col_offset=0))
    if not hasattr(at, "lineno"):
        at.lineno, at.col_offset = 1, 0  # type: ignore[attr-defined]
    body.insert(i, _prologue(ctx, explicit, at))
    ast.fix_missing_locations(tree)
    return tree


def _configured_mode(module_name: str) -> str:
    try:
        from squall import config  # noqa: PLC0415

        return config.current().mode_for(module_name)
    except Exception:  # noqa: BLE001 - a broken config is reported where it is loaded
        return "full"


def instrument_source(
    source: Union[str, bytes],
    filename: str,
    module_name: str,
    engine: Any = None,
    mode: Optional[str] = None,
) -> ast.Module:
    """Parses ``source`` (raising SyntaxError exactly as ``compile`` would) and returns the
    instrumented module tree. ``engine`` defaults to ``squall._engine``."""
    tree = compile(source, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    return instrument_tree(tree, filename, module_name, engine, mode)  # type: ignore[return-value]


def compile_instrumented(
    source: Union[str, bytes],
    filename: str,
    module_name: str,
    engine: Any = None,
    mode: Optional[str] = None,
) -> types.CodeType:
    """``instrument_source`` then ``compile``: the code object to exec as the module."""
    tree = instrument_source(source, filename, module_name, engine, mode)
    return bind_entry_constants(compile_tree(tree, filename))


def instrumented_source_text(
    source: Union[str, bytes],
    filename: str = "<string>",
    module_name: str = "__main__",
    engine: Any = None,
    mode: Optional[str] = None,
) -> Optional[str]:
    """The rewritten source as text (for debugging the rewriter). A call of a bound entry point
    (a constant in the code) shows as a call of ``_sq_<entry>_<id>``."""
    tree = instrument_source(source, filename, module_name, engine, mode)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Constant):
            entry = _placeholder_entry(node.func.value)
            if entry is not None:
                name = ENTRY_NAMES[entry[0]]
                node.func = _name(name if entry[1] == UNBOUND else "%s_%d" % (name, entry[1]), node.func)
    return ast.unparse(tree)
