"""The source rewriter: turns a module's source into an instrumented ``ast.Module``.

Calls-only mode (this pass): every ``def``/``async def``/``lambda`` reports its call, its returns,
its unwinding by an exception, and (generators, coroutines) each suspension and resumption.
Expression and binding recording are meant to be added later as further passes over the same
tree (see ``_PASSES``): each pass is a function ``(tree, ctx) -> None`` run in order.

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
(crates/squall_python/src/awaiting.rs), which record ``suspend`` / ``resume`` around each of
those awaits and leave every behaviour, error message and traceback as CPython's.

Full mode records a single-name binding with the call that makes its value: ``x = _sq_bind(SITE,
v)`` (bind hands v back) and ``for x in _sq_for(SITE, it)`` (the engine's iterator,
crates/squall_python/src/loop_iter.rs, records each item as it hands it to the loop; before 3.12
only, see ``_LOOP_ITER``), one call fewer per assignment or iteration than ``x = v`` followed by
``_sq_bind(SITE, x)``.

With the real engine (no explicit ``engine``), ``_sq_call(FORM, ...)``, ``_sq_ret(SITE, v)``,
``_sq_expr(SITE, v)`` and ``_sq_bind(SITE, v)`` become calls of a constant: the engine's entry
point bound to that form or site (``_engine.bound_entry``, ``bind_entry_constants``). Same
entries; one argument and one global load fewer per event, and ret/expr/bind are ``METH_O``
calls. No namespace changes (``_BOUND_ENTRIES``).

Every original node keeps its location; inserted nodes take the location of the statement they
stand next to, so tracebacks keep their files and lines.
"""

import ast
import operator
import sys
import threading
import types
import warnings
from typing import Any, Dict, List, Optional, Tuple, Union

__all__ = ["instrument_source", "compile_instrumented", "instrument_tree", "ENTRY_NAMES"]

# Local names the rewritten code uses. They must not start with two underscores: inside a class
# body, `__x` would be mangled to `_C__x`.
ENTRY_NAMES = {
    "call": "_sq_call",
    "ret": "_sq_ret",
    "unwind": "_sq_unwind",
    "suspend": "_sq_suspend",
    "resume": "_sq_resume",
    "expr": "_sq_expr",
    "bind": "_sq_bind",
    "loop_iter": "_sq_for",
    "async_for": "_sq_afor",
    "async_with": "_sq_awith",
    # writes (full mode): the store runs inside the entry point, see crates/squall_python/src/write_entry.rs
    "wattr": "_sq_wattr",
    "witem": "_sq_witem",
    "wdelattr": "_sq_wdelattr",
    "wdelitem": "_sq_wdelitem",
    "waugattr": "_sq_waugattr",
    "waugitem": "_sq_waugitem",
    "wsetattr": "_sq_wsetattr",
    "wslot": "_sq_wslot",
}
EXC_NAME = "_sq_exc"

_PY310 = sys.version_info >= (3, 10)
_PY312 = sys.version_info >= (3, 12)

# Defaults matching _engine.pyi, used if an engine object lacks the constants.
_CONST_DEFAULTS = {
    "FORM_FUNCTION": 0,
    "FORM_GENERATOR": 1,
    "FORM_COROUTINE": 2,
    "FORM_ASYNC_GENERATOR": 3,
    "FORM_LAMBDA": 4,
    "FORM_MODULE": 5,
    "SITE_RETURN": 0,
    "SITE_YIELD": 1,
    "SITE_AWAIT": 2,
    "SITE_EXPR": 3,
    "SITE_BIND": 4,
    "SITE_WRITE": 5,
}

MODES = ("full", "calls")

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
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor, ast.MatMult,
)
_AUG_FNS = (
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.ilshift, operator.irshift, operator.iand,
    operator.ior, operator.ixor, operator.imatmul,
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


def _default_engine():
    from squall import _engine  # noqa: PLC0415  (imported lazily: the engine may be absent)

    return _engine


class _Ctx:
    """What every pass needs: the engine, the module's identity, the constants."""

    def __init__(self, engine: Any, filename: str, module_name: str):
        self.engine = engine
        self.filename = filename
        self.module_name = module_name
        for k, d in _CONST_DEFAULTS.items():
            setattr(self, k, getattr(engine, k, d))

    def register_form(self, qualname: str, line: int, params: List[str], kind: int) -> int:
        return int(
            self.engine.register_form(self.module_name, qualname, self.filename, line, params, kind)
        )

    def register_site(
        self, form_id: int, kind: int, node: ast.AST, symbol: Optional[str] = None,
        reads: Optional[tuple] = None,
    ) -> int:
        line = node.lineno
        col = node.col_offset
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = col
        if reads is not None:
            return int(self.engine.register_site(form_id, kind, line, col, end_line, end_col, symbol, reads))
        if symbol is None:
            return int(self.engine.register_site(form_id, kind, line, col, end_line, end_col))
        return int(
            self.engine.register_site(form_id, kind, line, col, end_line, end_col, symbol=symbol)
        )


def _reads(value: Optional[ast.AST]) -> Optional[tuple]:
    """What a site's value is computed from, for ``origin`` (``squall_trace::SiteReads``): the
    value expression's range; the names it loads and the functions it calls by name (``f(...)``,
    ``obj.f(...)``), each once, never squall's own ``_sq_`` names; the attribute it reads if it
    is ``obj.attr`` (``[]`` for ``obj[key]``)."""
    if value is None or getattr(value, "lineno", None) is None:
        return None
    names: List[str] = []
    for n in ast.walk(value):
        name = None
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            name = n.id
        elif isinstance(n, ast.Call) and getattr(n, "_sq_entry", None) is None:
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name is not None and not name.startswith("_sq_") and name not in names:
            names.append(name)
    attr = value.attr if isinstance(value, ast.Attribute) else "[]" if isinstance(value, ast.Subscript) else None
    end_line = getattr(value, "end_lineno", None) or value.lineno
    end_col = getattr(value, "end_col_offset", None)
    return (value.lineno, value.col_offset, end_line, value.col_offset if end_col is None else end_col, names, attr)


# --- small AST builders ------------------------------------------------------------------------


def _name(id_: str, at: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(id=id_, ctx=ast.Load()), at)


def _const(v: Any, at: ast.AST) -> ast.Constant:
    return ast.copy_location(ast.Constant(value=v), at)


# The entry points rewritten code calls through one callable per form or site (``<expr 12>(v)``
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
    "call", "ret", "expr", "bind",
    "wattr", "witem", "wdelattr", "wdelitem", "waugattr", "waugitem", "wsetattr",
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


def _bound_entry(entry: str, id_: int) -> Any:
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
    if (
        entry in _BOUND_ENTRIES
        and getattr(_bound, "on", False)
        and args
        and isinstance(args[0], ast.Constant)
        and type(args[0].value) is int
    ):
        func = _const(_placeholder(entry, args[0].value), at)
        args = args[1:]
    c = ast.copy_location(ast.Call(func=func, args=args, keywords=[]), at)
    c._sq_entry = entry  # type: ignore[attr-defined]  # inserted by squall: the full pass skips it
    return c


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _param_names(args: ast.arguments) -> List[str]:
    names = [a.arg for a in getattr(args, "posonlyargs", [])]
    names += [a.arg for a in args.args]
    if args.vararg is not None:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append(args.kwarg.arg)
    return names


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _own_scope_nodes(node: ast.AST):
    """Yields the nodes evaluated in ``node``'s own scope (the body of a def/lambda), i.e. not
    inside nested functions, lambdas or class bodies. Decorators, defaults and class bases of
    nested scopes are evaluated here and are included; annotations are not."""
    todo: List[ast.AST]
    if isinstance(node, ast.Lambda):
        todo = [node.body]
    else:
        todo = list(node.body)  # type: ignore[attr-defined]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend(n.decorator_list)
            todo.extend(n.args.defaults)
            todo.extend(d for d in n.args.kw_defaults if d is not None)
        elif isinstance(n, ast.Lambda):
            todo.extend(n.args.defaults)
            todo.extend(d for d in n.args.kw_defaults if d is not None)
        elif isinstance(n, ast.ClassDef):
            todo.extend(n.decorator_list)
            todo.extend(n.bases)
            todo.extend(n.keywords)
        elif isinstance(n, ast.GeneratorExp):
            todo.append(n.generators[0].iter)
        else:
            todo.extend(ast.iter_child_nodes(n))


def _has_own_yield(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_scope_nodes(node))


def _scope_globals(node: ast.AST) -> set:
    out: set = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        todo = list(node.body)
        while todo:
            n = todo.pop()
            if isinstance(n, ast.Global):
                out.update(n.names)
            elif isinstance(n, (_SCOPES)) or isinstance(n, ast.expr):
                continue
            else:
                todo.extend(ast.iter_child_nodes(n))
    return out


# --- pass 0: qualnames -------------------------------------------------------------------------


class _Qualnames(ast.NodeVisitor):
    """Stores CPython's ``__qualname__`` of every def/lambda/class as ``node._sq_qualname``."""

    def __init__(self) -> None:
        # (qualname, kind, explicitly-global names); kind: "function" | "class" | "comprehension"
        self.stack: List[tuple] = []

    def _qual(self, name: str) -> str:
        if not self.stack:
            return name
        q, kind, globs = self.stack[-1]
        if name in globs:
            return name
        if kind == "function":
            return q + ".<locals>." + name
        return q + "." + name

    def _visit_all(self, nodes) -> None:
        for n in nodes:
            if n is not None:
                self.visit(n)

    def _visit_args(self, args: ast.arguments, annotations: bool) -> None:
        self._visit_all(args.defaults)
        self._visit_all(args.kw_defaults)
        if annotations:
            for a in getattr(args, "posonlyargs", []) + args.args + args.kwonlyargs:
                if a.annotation is not None:
                    self.visit(a.annotation)
            for a in (args.vararg, args.kwarg):
                if a is not None and a.annotation is not None:
                    self.visit(a.annotation)

    def visit_FunctionDef(self, node: Any) -> None:
        self._visit_all(node.decorator_list)
        self._visit_args(node.args, True)
        if node.returns is not None:
            self.visit(node.returns)
        node._sq_qualname = self._qual(node.name)
        self.stack.append((node._sq_qualname, "function", _scope_globals(node)))
        self._visit_all(node.body)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._visit_args(node.args, False)
        node._sq_qualname = self._qual("<lambda>")  # type: ignore[attr-defined]
        self.stack.append((node._sq_qualname, "function", set()))  # type: ignore[attr-defined]
        self.visit(node.body)
        self.stack.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._visit_all(node.decorator_list)
        self._visit_all(node.bases)
        self._visit_all(node.keywords)
        node._sq_qualname = self._qual(node.name)  # type: ignore[attr-defined]
        self.stack.append((node._sq_qualname, "class", _scope_globals(node)))  # type: ignore
        self._visit_all(node.body)
        self.stack.pop()

    def _comprehension(self, node: Any, name: str) -> None:
        if _PY312 and not isinstance(node, ast.GeneratorExp):
            self.generic_visit(node)  # inlined (PEP 709): no scope of its own
            return
        gens = node.generators
        self.visit(gens[0].iter)
        self.stack.append((self._qual(name), "comprehension", set()))
        for i, g in enumerate(gens):
            self.visit(g.target)
            if i:
                self.visit(g.iter)
            self._visit_all(g.ifs)
        for f in ("elt", "key", "value"):
            if hasattr(node, f):
                self.visit(getattr(node, f))
        self.stack.pop()

    def visit_ListComp(self, node: Any) -> None:
        self._comprehension(node, "<listcomp>")

    def visit_SetComp(self, node: Any) -> None:
        self._comprehension(node, "<setcomp>")

    def visit_DictComp(self, node: Any) -> None:
        self._comprehension(node, "<dictcomp>")

    def visit_GeneratorExp(self, node: Any) -> None:
        self._comprehension(node, "<genexpr>")


# --- pass 1: calls, returns, unwinds, suspensions ----------------------------------------------


class _Span:
    """A source range to register a site for (``ctx.register_site`` reads these four)."""

    def __init__(self, lineno: int, col_offset: int, end_lineno: Optional[int],
                 end_col_offset: Optional[int]):
        self.lineno, self.col_offset = lineno, col_offset
        self.end_lineno, self.end_col_offset = end_lineno, end_col_offset


class _Sites(ast.NodeTransformer):
    """Rewrites the return/yield/await sites of ONE function (not of nested scopes)."""

    def __init__(self, ctx: _Ctx, form_id: int, resumable: bool, async_gen: bool,
                 is_async: bool = False):
        self.ctx = ctx
        self.form_id = form_id
        self.resumable = resumable
        self.async_gen = async_gen
        self.is_async = is_async

    # nested scopes: only the parts evaluated in this scope
    def visit_FunctionDef(self, node: Any) -> Any:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        self._args(node.args)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        self._args(node.args)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.bases = [self.visit(b) for b in node.bases]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> Any:
        node.generators[0].iter = self.visit(node.generators[0].iter)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        node.target = self.visit(node.target)
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def _args(self, args: ast.arguments) -> None:
        args.defaults = [self.visit(d) for d in args.defaults]
        args.kw_defaults = [None if d is None else self.visit(d) for d in args.kw_defaults]

    # sites
    def visit_Return(self, node: ast.Return) -> Any:
        site = self.ctx.register_site(self.form_id, self.ctx.SITE_RETURN, node, reads=_reads(node.value))
        if node.value is None:
            ret = _entry_call("ret", [_const(site, node), _const(None, node)], node)
            if self.async_gen:  # `return <value>` is a SyntaxError in an async generator
                return [ast.copy_location(ast.Expr(value=ret), node), node]
            node.value = ret
            return node
        node.value = _entry_call("ret", [_const(site, node), self.visit(node.value)], node)
        return node

    def _suspend(self, node: Any, kind: int) -> Any:
        site = self.ctx.register_site(self.form_id, kind, node)
        if isinstance(node, ast.Yield):
            value = self.visit(node.value) if node.value is not None else _const(None, node)
        else:
            value = self.visit(node.value)
        node.value = _entry_call("suspend", [_const(site, node), value], node)
        return _entry_call("resume", [_const(self.form_id, node), node], node)

    def visit_Yield(self, node: ast.Yield) -> Any:
        return self._suspend(node, self.ctx.SITE_YIELD)

    def visit_YieldFrom(self, node: ast.YieldFrom) -> Any:
        return self._suspend(node, self.ctx.SITE_AWAIT)

    def visit_Await(self, node: ast.Await) -> Any:
        if not self.resumable:
            return self.generic_visit(node)
        return self._suspend(node, self.ctx.SITE_AWAIT)

    # implicit awaits: the async iterable / context manager is wrapped by the engine
    def _implicit(self, entry: str, obj: ast.expr, start: ast.AST, end: ast.AST) -> ast.Call:
        span = _Span(start.lineno, start.col_offset,
                     getattr(end, "end_lineno", None), getattr(end, "end_col_offset", None))
        site = self.ctx.register_site(self.form_id, self.ctx.SITE_AWAIT, span)
        return _entry_call(entry, [_const(site, obj), _const(self.form_id, obj), obj], obj)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> Any:
        self.generic_visit(node)
        if self.is_async:  # each __anext__() is awaited; the site: `async for x in it`
            node.iter = self._implicit("async_for", node.iter, node, node.iter)
        return node

    def visit_AsyncWith(self, node: ast.AsyncWith) -> Any:
        self.generic_visit(node)
        if self.is_async:  # __aenter__() and __aexit__() are awaited; a site per item
            for i, it in enumerate(node.items):
                start = node if i == 0 else it.context_expr
                end = it.optional_vars if it.optional_vars is not None else it.context_expr
                it.context_expr = self._implicit("async_with", it.context_expr, start, end)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> Any:
        # an async comprehension (list, set, dict) runs eagerly: its awaits suspend this frame.
        # Async generator expressions are not visited here (they run lazily, in their own frame).
        self.generic_visit(node)
        if node.is_async and self.is_async:
            node.iter = self._implicit("async_for", node.iter, node.target, node.iter)
        return node


class _Calls(ast.NodeTransformer):
    """Calls-only pass. Nested scopes are rewritten first, each on its own."""

    def __init__(self, ctx: _Ctx):
        self.ctx = ctx

    def _stmts(self, stmts: List[ast.stmt]) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            if isinstance(r, list):
                out.extend(r)
            else:
                out.append(r)
        return out

    def _args(self, args: ast.arguments) -> None:
        args.defaults = [self.visit(d) for d in args.defaults]
        args.kw_defaults = [None if d is None else self.visit(d) for d in args.kw_defaults]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:  # never touch annotations
        node.target = self.visit(node.target)
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_arg(self, node: ast.arg) -> Any:  # annotations of args: left alone
        return node

    def visit_FunctionDef(self, node: Any) -> Any:
        ctx = self.ctx
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        self._args(node.args)
        node.body = self._stmts(node.body)

        is_async = isinstance(node, ast.AsyncFunctionDef)
        gen = _has_own_yield(node)
        if is_async:
            kind = ctx.FORM_ASYNC_GENERATOR if gen else ctx.FORM_COROUTINE
        else:
            kind = ctx.FORM_GENERATOR if gen else ctx.FORM_FUNCTION
        params = _param_names(node.args)
        qual = getattr(node, "_sq_qualname", node.name)
        form = ctx.register_form(qual, node.lineno, params, kind)
        node._sq_form = form

        sites = _Sites(ctx, form, resumable=is_async or gen, async_gen=is_async and gen,
                       is_async=is_async)
        body = node.body
        doc: List[ast.stmt] = []
        if body and _is_docstring(body[0]):
            doc, body = body[:1], body[1:]
        new_body: List[ast.stmt] = []
        for s in body:
            r = sites.visit(s)
            new_body.extend(r if isinstance(r, list) else [r])
        body = new_body

        first = body[0] if body else (doc[0] if doc else node)
        last = body[-1] if body else first
        if not body or not isinstance(body[-1], (ast.Return, ast.Raise)):
            site = ctx.register_site(form, ctx.SITE_RETURN, node)
            ret = _entry_call("ret", [_const(site, last), _const(None, last)], last)
            if is_async and gen:
                body.append(ast.copy_location(ast.Expr(value=ret), last))
            else:
                body.append(ast.copy_location(ast.Return(value=ret), last))

        call = ast.copy_location(
            ast.Expr(
                value=_entry_call(
                    "call", [_const(form, first)] + [_name(p, first) for p in params], first
                )
            ),
            first,
        )
        unwind = ast.copy_location(
            ast.Expr(
                value=_entry_call("unwind", [_const(form, first), _name(EXC_NAME, first)], first)
            ),
            first,
        )
        handler = ast.copy_location(
            ast.ExceptHandler(  # type: ignore[call-arg]
                type=_name("BaseException", first),
                name=EXC_NAME,
                body=[unwind, ast.copy_location(ast.Raise(exc=None, cause=None), first)],
            ),
            first,
        )
        handler._sq_inserted = True  # type: ignore[attr-defined]
        try_ = ast.copy_location(
            ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[]), first
        )
        node.body = doc + [call, try_]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        ctx = self.ctx
        self._args(node.args)
        node.body = self.visit(node.body)
        if _has_own_yield(node):
            return node  # a generator lambda: left alone
        params = _param_names(node.args)
        qual = getattr(node, "_sq_qualname", "<lambda>")
        form = ctx.register_form(qual, node.lineno, params, ctx.FORM_LAMBDA)
        node._sq_form = form  # type: ignore[attr-defined]
        body = node.body
        site = ctx.register_site(form, ctx.SITE_RETURN, body, reads=_reads(body))
        call = _entry_call("call", [_const(form, body)] + [_name(p, body) for p in params], body)
        either = ast.copy_location(ast.BoolOp(op=ast.Or(), values=[call, body]), body)
        either._sq_entry = "lambda"  # type: ignore[attr-defined]
        node.body = _entry_call("ret", [_const(site, body), either], body)
        return node


def _calls_pass(tree: ast.AST, ctx: _Ctx) -> None:
    _Calls(ctx).visit(tree)


# --- pass 2: expressions and bindings (full mode) ----------------------------------------------


def _locals_of(node: ast.AST) -> frozenset:
    """Names bound in ``node``'s own scope (params, assignment/for/with/except/import targets,
    nested def/class names, match captures, walrus and comprehension targets), minus names
    declared ``global``. Plain loads of these are not recorded: bindings carry their values."""
    out = set(_param_names(node.args))  # type: ignore[attr-defined]
    for n in _own_scope_nodes(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add(a.asname or a.name.split(".")[0])
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif _PY310 and isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.add(n.name)
        elif _PY310 and isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)
    return frozenset(out - _scope_globals(node))


def _pure_binding(t: ast.AST) -> bool:
    """A target made of names only: the bindings carry the whole assigned value."""
    if isinstance(t, ast.Name):
        return True
    if isinstance(t, ast.Starred):
        return _pure_binding(t.value)
    if isinstance(t, (ast.Tuple, ast.List)):
        return all(_pure_binding(e) for e in t.elts)
    return False


def _target_names(t: ast.AST, out: List[ast.Name]) -> List[ast.Name]:
    if isinstance(t, ast.Name):
        out.append(t)
    elif isinstance(t, ast.Starred):
        _target_names(t.value, out)
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            _target_names(e, out)
    return out


def _pattern_names(p: ast.AST, out: List[ast.AST]) -> List[ast.AST]:
    for n in ast.walk(p):
        if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.append(n)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.append(n)
    return out


_NO_WRAP_UNARY = (ast.USub, ast.UAdd)

# Single-name bindings recorded by the call making the value (`x = _sq_bind(S, v)`,
# `for x in _sq_for(S, it)`) rather than by a `_sq_bind(S, x)` statement after the store: the same
# entries, in the same order, with the same sites. False: the statement form (tests compare them).
_FUSE_BINDS = True
# `for x in _sq_for(S, it)` only before 3.12. From 3.12 on, CPython runs a `for` over a generator
# without a C call (FOR_ITER_GEN pushes the generator's frame), while any iterator wrapper calls
# the generator's __next__ from C, which counts against the C recursion limit: generators
# iterating generators ~750 deep would raise RecursionError on 3.12 where plain Python does not.
# Before 3.12 the loop itself calls __next__ from C: the wrapper adds nothing.
_LOOP_ITER = sys.version_info < (3, 12)


class _Full:
    """Records every evaluated sub-expression (``_sq_expr(SITE, e)``) and every local binding
    (``_sq_bind(SITE, name)``) inside instrumented functions and lambdas. Runs after the calls
    pass, whose inserted nodes it recognises (``_sq_entry``) and leaves alone. Nothing is recorded
    at module level or in class bodies (no frame to record into), nor in the lazily evaluated
    parts of generator expressions (they run whenever the consumer pulls, possibly inside another
    recorded frame)."""

    def __init__(self, ctx: _Ctx, known_fns: frozenset = frozenset()):
        self.ctx = ctx
        self.form: Optional[int] = None
        self.locals: frozenset = frozenset()
        self.lazy = 0
        self.known_fns = known_fns

    # -- helpers
    def _on(self) -> bool:
        return self.form is not None and not self.lazy

    def _wrap(self, node: ast.expr) -> ast.expr:
        reads = _reads(node)
        site = self.ctx.register_site(self.form, self.ctx.SITE_EXPR, node, reads=reads)  # type: ignore
        return _entry_call("expr", [_const(site, node), node], node)

    def _bind_call(self, at: ast.AST, name: str, value: ast.expr, src: Optional[ast.AST] = None) -> ast.Call:
        """``_sq_bind(SITE, value)``; ``src``: the expression the bound value comes from."""
        reads = _reads(src)
        site = self.ctx.register_site(self.form, self.ctx.SITE_BIND, at, symbol=name, reads=reads)  # type: ignore
        return _entry_call("bind", [_const(site, at), value], at)

    def _fusable(self, t: Any) -> bool:
        """``t`` is a single name whose binding can be recorded by the call that produces its
        value (``x = _sq_bind(SITE, v)``, ``for x in _sq_for(SITE, it)``)."""
        return (
            _FUSE_BINDS and self._on() and isinstance(t, ast.Name)
            and not t.id.startswith("_sq_")
        )

    def _loop_iter(self, target: ast.Name, it: ast.expr, loop: ast.AST) -> ast.Call:
        """``_sq_for(SITE, it)`` for the loop (a ``for`` statement or a comprehension) ``loop``.
        The call raises what ``iter(it)`` raises: it takes the location CPython gives its
        ``GET_ITER`` (the loop's, up to 3.12), so tracebacks and their carets stay the same."""
        reads = _reads(it)
        site = self.ctx.register_site(self.form, self.ctx.SITE_BIND, target, symbol=target.id, reads=reads)  # type: ignore
        at = loop
        c = ast.copy_location(
            ast.Call(func=_name(ENTRY_NAMES["loop_iter"], at), args=[_const(site, at), it], keywords=[]),
            at,
        )
        c._sq_entry = "loop_iter"  # type: ignore[attr-defined]
        return c

    def _binds(self, nodes: List[Any], src: Optional[ast.AST] = None) -> List[ast.stmt]:
        """``_sq_bind(SITE, name)`` statements for target nodes (Names, match patterns); ``src``:
        the expression their values come from."""
        if not self._on():
            return []
        out: List[ast.stmt] = []
        for n in nodes:
            name = n.id if isinstance(n, ast.Name) else (n.rest if isinstance(n, ast.MatchMapping) else n.name)
            if name.startswith("_sq_"):
                continue
            call = self._bind_call(n, name, _name(name, n), src=src)
            out.append(ast.copy_location(ast.Expr(value=call), n))
        return out

    # -- writes (`obj.a = v`, `obj[k] = v`, `del`, augmented, `setattr(o, n, v)`): the store
    # happens inside the write entry point, which gets the operands as arguments in the order
    # Python evaluates them, each evaluated once.
    def _writable(self, t: Any) -> bool:
        """``t`` is an attribute or item target whose write can go through an entry point: not
        a slice (its key would need building), not a private ``__name`` (the compiler mangles
        those, a string constant would not be)."""
        if not self._on():
            return False
        if isinstance(t, ast.Attribute):
            return not (t.attr.startswith("__") and not t.attr.endswith("__"))
        if isinstance(t, ast.Subscript):
            s = t.slice
            return not isinstance(s, ast.Slice) and not (
                isinstance(s, ast.Tuple) and any(isinstance(x, ast.Slice) for x in s.elts)
            )
        return False

    def _write_site(self, t: Any, value: Optional[ast.AST] = None) -> ast.Constant:
        symbol = t.attr if isinstance(t, ast.Attribute) else None
        reads = _reads(value)
        site = self.ctx.register_site(self.form, self.ctx.SITE_WRITE, t, symbol=symbol, reads=reads)  # type: ignore
        return _const(site, t)

    def _write_call(self, t: Any, value: ast.expr) -> ast.Call:
        """``_sq_wattr(SITE, value, obj, "a")`` / ``_sq_witem(SITE, value, obj, key)``: the
        value first (already evaluated by Python before any target), then the target's parts."""
        self._target(t)
        site = self._write_site(t, value)
        if isinstance(t, ast.Attribute):
            return _entry_call("wattr", [site, value, t.value, _const(t.attr, t)], t)
        return _entry_call("witem", [site, value, t.value, t.slice], t)

    def _slot(self, t: Any) -> ast.Attribute:
        """The write target ``t`` (writable) as ``_sq_wslot(SITE, obj, key, item).v``: a target
        Python evaluates and stores in its own order (write_slot.rs)."""
        self._target(t)
        site = self._write_site(t)
        if isinstance(t, ast.Attribute):
            args = [site, t.value, _const(t.attr, t), _const(False, t)]
        else:
            args = [site, t.value, t.slice, _const(True, t)]
        call = _entry_call("wslot", args, t)
        return ast.copy_location(ast.Attribute(value=call, attr="v", ctx=ast.Store()), t)

    def _store_target(self, t: Any) -> Any:
        """An assignment target with its writable attribute and item targets, at any depth of
        tuples, lists and starred targets, as write slots; the rest as ``_target`` leaves it."""
        if isinstance(t, (ast.Attribute, ast.Subscript)) and self._writable(t):
            return self._slot(t)
        if isinstance(t, ast.Starred):
            t.value = self._store_target(t.value)
            return t
        if isinstance(t, (ast.Tuple, ast.List)):
            t.elts = [self._store_target(x) for x in t.elts]
            return t
        return self._target(t)

    def _scoped(self, form: Optional[int], locals_: frozenset, fn: Any) -> Any:
        saved = (self.form, self.locals, self.lazy)
        self.form, self.locals, self.lazy = form, locals_, 0
        try:
            return fn()
        finally:
            self.form, self.locals, self.lazy = saved

    # -- expressions
    def e(self, node: Any, wrap: bool = True) -> Any:
        if node is None:
            return None
        m = getattr(self, "e_" + type(node).__name__, None)
        if m is None:
            return node  # unknown kinds are left alone
        new, worth = m(node)
        if worth and wrap and self._on():
            return self._wrap(new)
        return new

    def e_Constant(self, node: Any) -> Any:
        return node, False

    def e_Name(self, node: ast.Name) -> Any:
        worth = (
            isinstance(node.ctx, ast.Load)
            and node.id not in self.locals
            and node.id != "super"
            and not node.id.startswith("_sq_")
        )
        return node, worth

    def e_Attribute(self, node: ast.Attribute) -> Any:
        node.value = self.e(node.value)
        return node, isinstance(node.ctx, ast.Load)

    def e_Subscript(self, node: ast.Subscript) -> Any:
        node.value = self.e(node.value)
        node.slice = self._slice(node.slice)
        return node, isinstance(node.ctx, ast.Load)

    def _slice(self, s: Any) -> Any:
        if isinstance(s, ast.Slice):
            s.lower, s.upper, s.step = self.e(s.lower), self.e(s.upper), self.e(s.step)
            return s
        if isinstance(s, ast.Tuple) and any(isinstance(x, ast.Slice) for x in s.elts):
            s.elts = [self._slice(x) for x in s.elts]
            return s
        return self.e(s)

    def e_Starred(self, node: ast.Starred) -> Any:
        node.value = self.e(node.value)
        return node, False

    def e_Call(self, node: ast.Call) -> Any:
        entry = getattr(node, "_sq_entry", None)
        if entry is not None:
            if entry in ("ret", "suspend", "resume") and node.args:
                node.args[-1] = self.e(node.args[-1], wrap=False)  # the value (after the site)
            elif entry in ("async_for", "async_with") and len(node.args) == 3:
                node.args[2] = self.e(node.args[2])  # the iterable / manager, as before
            return node, False
        f = node.func
        if isinstance(f, ast.Name) and f.id in self.known_fns and f.id not in self.locals:
            # A call to a plain function of this module, itself recorded: its fn-call entry
            # holds the arguments and its fn-return the value; recording them here too would
            # only double the cost (DESIGN.md: every avoided call counts).
            node.args = [self.e(a, wrap=isinstance(a, ast.Starred)) for a in node.args]
            for k in node.keywords:
                k.value = self.e(k.value, wrap=k.arg is None)
            return node, False
        if (
            isinstance(f, ast.Name) and f.id == "setattr" and f.id not in self.locals
            and not self.ctx.setattr_rebound and self._on()
            and len(node.args) == 3 and not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            # `setattr(o, n, v)` -> `_sq_wsetattr(S, o, n, v)`: same operands, same order, the
            # same store (PyObject_SetAttr) and the same None back.
            site = self.ctx.register_site(self.form, self.ctx.SITE_WRITE, node)  # type: ignore
            args = [self.e(a) for a in node.args]
            return _entry_call("wsetattr", [_const(site, node)] + args, node), False
        if isinstance(f, ast.Attribute):  # a method call: the receiver, never `obj.meth`
            f.value = self.e(f.value)
        elif not isinstance(f, ast.Name):  # a plain callee name is not recorded (the call is)
            node.func = self.e(f)
        node.args = [self.e(a) for a in node.args]
        for k in node.keywords:
            k.value = self.e(k.value)
        return node, not (isinstance(f, ast.Name) and f.id == "super")

    def e_BoolOp(self, node: ast.BoolOp) -> Any:
        if getattr(node, "_sq_entry", None) == "lambda":
            node.values[1] = self.e(node.values[1], wrap=False)
            return node, False
        node.values = [self.e(v) for v in node.values]
        return node, True

    def e_BinOp(self, node: ast.BinOp) -> Any:
        node.left = self.e(node.left)
        node.right = self.e(node.right)
        return node, True

    def e_UnaryOp(self, node: ast.UnaryOp) -> Any:
        if isinstance(node.op, _NO_WRAP_UNARY) and isinstance(node.operand, ast.Constant):
            return node, False  # `-1` is a constant
        node.operand = self.e(node.operand)
        return node, True

    def e_Compare(self, node: ast.Compare) -> Any:
        node.left = self.e(node.left)
        node.comparators = [self.e(c) for c in node.comparators]
        return node, True

    def e_IfExp(self, node: ast.IfExp) -> Any:
        node.test, node.body, node.orelse = self.e(node.test), self.e(node.body), self.e(node.orelse)
        return node, True

    def e_Dict(self, node: ast.Dict) -> Any:
        node.keys = [self.e(k) for k in node.keys]
        node.values = [self.e(v) for v in node.values]
        return node, True

    def _elts(self, node: Any) -> Any:
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            return self._target(node), False
        node.elts = [self.e(x) for x in node.elts]
        return node, True

    e_List = e_Tuple = e_Set = _elts

    def e_JoinedStr(self, node: ast.JoinedStr) -> Any:
        self._fparts(node)
        return node, True

    def _fparts(self, node: ast.JoinedStr) -> None:
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                v.value = self.e(v.value)
                if isinstance(v.format_spec, ast.JoinedStr):
                    self._fparts(v.format_spec)

    def e_NamedExpr(self, node: ast.NamedExpr) -> Any:
        node.value = self.e(node.value, wrap=False)  # the binding carries the value
        if not self._on():
            return node, False
        name = node.target.id
        # `_sq_bind(S, (y := v))`: y is bound, then recorded; bind hands v back
        return self._bind_call(node.target, name, node, src=node.value), False

    def _comp(self, node: Any, lazy: bool) -> None:
        gens = node.generators
        for i, g in enumerate(gens):
            if i == 0:
                g.iter = self.e(g.iter)
                if lazy:
                    self.lazy += 1
            else:
                g.iter = self.e(g.iter)
            g.target = self._target(g.target)
            binds: List[ast.expr] = []
            if _LOOP_ITER and not g.is_async and self._fusable(g.target):
                # `for i in _sq_for(S, it)`: the iterator records each binding
                g.iter = self._loop_iter(g.target, g.iter, node)
            elif self._on():
                calls = [
                    self._bind_call(n, n.id, _name(n.id, n))
                    for n in _target_names(g.target, []) if not n.id.startswith("_sq_")
                ]
                if calls:
                    # `if (_sq_bind(S1, k), _sq_bind(S2, v))`: a non-empty tuple is true
                    # whatever the values are (their truth is never asked)
                    at = calls[0]
                    binds = [ast.copy_location(ast.Tuple(elts=calls, ctx=ast.Load()), at)]
            g.ifs = binds + [self.e(c) for c in g.ifs]
        for f in ("elt", "key", "value"):
            if hasattr(node, f):
                setattr(node, f, self.e(getattr(node, f)))
        if lazy:
            self.lazy -= 1

    def e_ListComp(self, node: Any) -> Any:
        self._comp(node, False)
        return node, True

    e_SetComp = e_DictComp = e_ListComp

    def e_GeneratorExp(self, node: Any) -> Any:
        self._comp(node, True)
        return node, False

    def e_Lambda(self, node: ast.Lambda) -> Any:
        self._args(node.args)
        form = getattr(node, "_sq_form", None)
        node.body = self._scoped(form, _locals_of(node), lambda: self.e(node.body, wrap=False))
        return node, False

    def _await(self, node: Any) -> Any:
        node.value = self.e(node.value, wrap=False)
        return node, False

    e_Await = e_Yield = e_YieldFrom = _await

    def _args(self, args: ast.arguments) -> None:  # defaults run in the enclosing scope
        args.defaults = [self.e(d) for d in args.defaults]
        args.kw_defaults = [self.e(d) for d in args.kw_defaults]

    def _target(self, t: Any) -> Any:
        """An assignment/del target: its Store/Del node is never wrapped, the loads inside it
        (`obj` in `obj.x = v`, `a` and `i` in `a[i] = v`) are."""
        if isinstance(t, ast.Attribute):
            t.value = self.e(t.value)
        elif isinstance(t, ast.Subscript):
            t.value = self.e(t.value)
            t.slice = self._slice(t.slice)
        elif isinstance(t, ast.Starred):
            t.value = self._target(t.value)
        elif isinstance(t, (ast.Tuple, ast.List)):
            t.elts = [self._target(x) for x in t.elts]
        return t

    # -- statements
    def stmts(self, body: List[ast.stmt]) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        for st in body:
            m = getattr(self, "s_" + type(st).__name__, None)
            r = m(st) if m is not None else st
            if isinstance(r, list):
                out.extend(r)
            else:
                out.append(r)
        return out

    def s_FunctionDef(self, node: Any) -> Any:
        self._args(node.args)
        form = getattr(node, "_sq_form", None)
        node.body = self._scoped(form, _locals_of(node), lambda: self.stmts(node.body))
        return [node] + self._binds([ast.copy_location(ast.Name(id=node.name, ctx=ast.Store()), node)])

    s_AsyncFunctionDef = s_FunctionDef

    def s_ClassDef(self, node: ast.ClassDef) -> Any:
        node.bases = [self.e(b) for b in node.bases]
        for k in node.keywords:
            k.value = self.e(k.value)
        node.body = self._scoped(None, frozenset(), lambda: self.stmts(node.body))
        return [node] + self._binds([ast.copy_location(ast.Name(id=node.name, ctx=ast.Store()), node)])

    def s_Return(self, node: ast.Return) -> Any:
        node.value = self.e(node.value, wrap=False)
        return node

    def s_Expr(self, node: ast.Expr) -> Any:
        if getattr(node.value, "_sq_entry", None) == "call":
            return node
        node.value = self.e(node.value)
        return node

    def s_Assign(self, node: ast.Assign) -> Any:
        if all(self._writable(t) for t in node.targets):
            # `a.x = b[i] = v` -> `_sq_witem(S2, _sq_wattr(S1, v, a, "x"), b, i)`: Python stores
            # the targets left to right, each evaluated just before its store, as nested here.
            # (A mix with names or tuples is left as it is: a name target stored between two
            # writes could change what the next target evaluates to, as in `x = x.next = v`.)
            # The value itself is not recorded as an expression: the first write records it, as
            # `x = _sq_bind(S, v)` does for a name.
            value = self.e(node.value, wrap=False)
            for t in node.targets:
                value = self._write_call(t, value)
            return ast.copy_location(ast.Expr(value=value), node)
        pure = all(_pure_binding(t) for t in node.targets)
        # `a.x, b.y = u, v`: Python stores u and v without making the tuple (for up to three
        # names); recording the display would make one, which the collector counts (and could
        # start a collection the program would not). Its items are recorded, and each write.
        spread = (
            len(node.targets) == 1
            and isinstance(node.targets[0], (ast.Tuple, ast.List))
            and isinstance(node.value, (ast.Tuple, ast.List))
            and len(node.targets[0].elts) == len(node.value.elts)
            and not any(isinstance(e, ast.Starred) for e in node.targets[0].elts + node.value.elts)
        )
        node.value = self.e(node.value, wrap=not pure and not spread)
        if len(node.targets) == 1 and self._fusable(node.targets[0]):
            # `x = _sq_bind(S, v)`: v, recorded, then stored (storing a name runs no code)
            t = node.targets[0]
            node.value = self._bind_call(t, t.id, node.value, src=node.value)
            return node
        # Tuple targets and chains mixing names and writes store through write slots: Python
        # evaluates each target, and stores, in its own order.
        node.targets = [self._store_target(t) for t in node.targets]
        names: List[ast.Name] = []
        for t in node.targets:
            _target_names(t, names)
        return [node] + self._binds(names, src=node.value)

    def s_AugAssign(self, node: ast.AugAssign) -> Any:
        if (
            self._writable(node.target)
            and isinstance(node.value, (ast.Constant, ast.Name))
            and type(node.op) in AUG_OPS
        ):
            # `obj.a += v` -> `_sq_waugattr(S, obj, "a", OP, v)`: the entry point loads, applies
            # the in-place operator and stores, as the bytecode does. Python evaluates `v` after
            # the load; only a constant or a name is taken here, whose evaluation has no effect
            # to reorder (a name unbound at that point raises NameError before, not after, the
            # load). Other operands keep the plain statement (not recorded as a write).
            t = self._target(node.target)
            site = self._write_site(t)
            op = _const(AUG_OPS.index(type(node.op)), t)
            value = self.e(node.value)
            if isinstance(t, ast.Attribute):
                call = _entry_call("waugattr", [site, t.value, _const(t.attr, t), op, value], t)
            else:
                call = _entry_call("waugitem", [site, t.value, t.slice, op, value], t)
            return ast.copy_location(ast.Expr(value=call), node)
        if self._writable(node.target):
            # `obj.a += f()` -> `_sq_wslot(S, obj, "a", False).v += f()`: Python loads the target
            # through the slot, evaluates the operand, applies the operator and stores through
            # the slot (recorded), in its own order.
            node.target = self._slot(node.target)
            node.value = self.e(node.value)
            return node
        # `x += v`: the binding records the new x (the old one is x's previous binding), so the
        # operand itself is not recorded; `self.n += v` / `a[i] += v` record the operand.
        named = isinstance(node.target, ast.Name)
        node.target = self._target(node.target)
        node.value = self.e(node.value, wrap=not named)
        return [node] + self._binds(_target_names(node.target, []), src=node.value)

    def s_AnnAssign(self, node: ast.AnnAssign) -> Any:  # the annotation is never touched
        if node.value is None:
            node.target = self._target(node.target)
            return node
        simple = isinstance(node.target, ast.Name)
        node.value = self.e(node.value, wrap=not simple)
        node.target = self._store_target(node.target)
        if self._fusable(node.target):
            node.value = self._bind_call(node.target, node.target.id, node.value, src=node.value)
            return node
        return [node] + (self._binds([node.target]) if simple else [])

    def s_For(self, node: Any) -> Any:
        node.iter = self.e(node.iter)
        node.target = self._store_target(node.target)
        if _LOOP_ITER and isinstance(node, ast.For) and self._fusable(node.target):
            # `for x in _sq_for(S, it)`: the engine's iterator records each binding
            node.iter = self._loop_iter(node.target, node.iter, node)
            node.body = self.stmts(node.body)
        else:
            node.body = self._binds(_target_names(node.target, [])) + self.stmts(node.body)
        node.orelse = self.stmts(node.orelse)
        return node

    s_AsyncFor = s_For

    def s_While(self, node: ast.While) -> Any:
        node.test = self.e(node.test)
        node.body = self.stmts(node.body)
        node.orelse = self.stmts(node.orelse)
        return node

    def s_If(self, node: ast.If) -> Any:
        node.test = self.e(node.test)
        node.body = self.stmts(node.body)
        node.orelse = self.stmts(node.orelse)
        return node

    def s_With(self, node: Any) -> Any:
        names: List[ast.Name] = []
        for it in node.items:
            it.context_expr = self.e(it.context_expr)
            if it.optional_vars is not None:
                it.optional_vars = self._store_target(it.optional_vars)
                _target_names(it.optional_vars, names)
        node.body = self._binds(names) + self.stmts(node.body)
        return node

    s_AsyncWith = s_With

    def s_Raise(self, node: ast.Raise) -> Any:
        node.exc = self.e(node.exc)
        node.cause = self.e(node.cause)
        return node

    def s_Try(self, node: Any) -> Any:
        node.body = self.stmts(node.body)
        for h in node.handlers:
            if getattr(h, "_sq_inserted", False):
                continue
            h.type = self.e(h.type)
            named = [ast.copy_location(ast.Name(id=h.name, ctx=ast.Store()), h)] if h.name else []
            h.body = self._binds(named) + self.stmts(h.body)
        node.orelse = self.stmts(node.orelse)
        node.finalbody = self.stmts(node.finalbody)
        return node

    s_TryStar = s_Try

    def s_Assert(self, node: ast.Assert) -> Any:
        node.test = self.e(node.test)
        node.msg = self.e(node.msg)
        return node

    def s_Delete(self, node: ast.Delete) -> Any:
        if not any(self._writable(t) for t in node.targets):
            node.targets = [self._target(t) for t in node.targets]
            return node
        # `del a.x, y, b[i]` deletes left to right, each target evaluated just before: one
        # statement per target, in order, keeps that (and stops where Python stops on an error).
        out: List[ast.stmt] = []
        for t in node.targets:
            if self._writable(t):
                self._target(t)
                site = self._write_site(t)
                if isinstance(t, ast.Attribute):
                    call = _entry_call("wdelattr", [site, t.value, _const(t.attr, t)], t)
                else:
                    call = _entry_call("wdelitem", [site, t.value, t.slice], t)
                out.append(ast.copy_location(ast.Expr(value=call), t))
            else:
                out.append(ast.copy_location(ast.Delete(targets=[self._target(t)]), t))
        return out

    def s_Import(self, node: Any) -> Any:
        names = [
            ast.copy_location(ast.Name(id=a.asname or a.name.split(".")[0], ctx=ast.Store()), node)
            for a in node.names if a.name != "*"
        ]
        return [node] + self._binds(names)

    s_ImportFrom = s_Import

    def s_Match(self, node: Any) -> Any:
        node.subject = self.e(node.subject)
        for c in node.cases:  # patterns are never touched
            c.guard = self.e(c.guard)
            c.body = self._binds(_pattern_names(c.pattern, [])) + self.stmts(c.body)
        return node


def _known_functions(tree: ast.AST) -> frozenset:
    """Names of this module's plain top-level functions (not async, not generators, not
    decorated) that nothing else rebinds: a call to one of them is recorded by the callee."""
    body = getattr(tree, "body", [])
    count: Dict[str, int] = {}
    cands = set()
    for st in body:
        if isinstance(st, ast.FunctionDef) and not st.decorator_list and not _has_own_yield(st):
            cands.add(st.name)
    for n in ast.walk(tree):  # any other binding of the name anywhere makes it unknown
        names: List[str] = []
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            names.append(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.extend(a.asname or a.name.split(".")[0] for a in n.names)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names.extend(n.names * 2)
        for x in names:
            count[x] = count.get(x, 0) + 1
    return frozenset(c for c in cands if count.get(c, 0) == 1)


def _rebinds(tree: ast.AST, name: str) -> bool:
    """``name`` is bound somewhere in the module (assigned, defined, imported, a parameter):
    a call to it may not be the builtin's."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name:
            return True
        if isinstance(n, (ast.Import, ast.ImportFrom)) and any(
            (a.asname or a.name.split(".")[0]) == name or a.name == "*" for a in n.names
        ):
            return True
        if isinstance(n, ast.arg) and n.arg == name:
            return True
    return False


def _full_pass(tree: ast.AST, ctx: _Ctx) -> None:
    ctx.setattr_rebound = _rebinds(tree, "setattr")  # type: ignore[attr-defined]
    f = _Full(ctx, _known_functions(tree))
    tree.body = f.stmts(tree.body)  # type: ignore[attr-defined]


# Passes per mode, run in order on the tree.
_MODE_PASSES = {"calls": [_calls_pass], "full": [_calls_pass, _full_pass]}

# The default mode's passes (kept for callers that look at it).
_PASSES = _MODE_PASSES["full"]


# --- the module prologue -----------------------------------------------------------------------


def _install_builtins() -> None:
    """Makes the real engine's entry points reachable as ``_sq_*`` builtins. Rewritten modules
    load them as globals, which fall back to builtins: no name is added to the module's
    namespace (``vars(module)``, ``dir(module)`` and namespace comparisons stay unchanged)."""
    import builtins

    from squall import _engine  # noqa: PLC0415

    for k, v in ENTRY_NAMES.items():
        if getattr(builtins, v, None) is not getattr(_engine, k, None):
            setattr(builtins, v, getattr(_engine, k))


def _prologue(ctx: _Ctx, explicit_engine: bool, at: ast.AST) -> ast.stmt:
    imp_self = ast.Call(
        func=ast.Name(id="__import__", ctx=ast.Load()),
        args=[ast.Constant(value=__name__)],
        keywords=[ast.keyword(arg="fromlist", value=ast.List(elts=[ast.Constant("_")], ctx=ast.Load()))],
    )
    if not explicit_engine:
        # `__import__("squall._instrument.rewrite", fromlist=["_"])._install_builtins()`
        node: ast.stmt = ast.Expr(
            value=ast.Call(
                func=ast.Attribute(value=imp_self, attr="_install_builtins", ctx=ast.Load()),
                args=[],
                keywords=[],
            )
        )
    else:  # tests and embedders: module globals bound to that engine's entry points
        key = _engine_key(ctx.engine)
        target = ast.Tuple(
            elts=[ast.Name(id=v, ctx=ast.Store()) for v in ENTRY_NAMES.values()], ctx=ast.Store()
        )
        value = ast.Call(
            func=ast.Attribute(value=imp_self, attr="_entry_points", ctx=ast.Load()),
            args=[ast.Constant(value=key)],
            keywords=[],
        )
        node = ast.Assign(targets=[target], value=value)
    ast.copy_location(node, at)
    return ast.fix_missing_locations(node)  # type: ignore[return-value]


def _prologue_index(body: List[ast.stmt]) -> int:
    i = 0
    if body and _is_docstring(body[0]):
        i = 1
    while (
        i < len(body)
        and isinstance(body[i], ast.ImportFrom)
        and body[i].module == "__future__"  # type: ignore[attr-defined]
    ):
        i += 1
    return i


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
    source: Union[str, bytes], filename: str, module_name: str, engine: Any = None,
    mode: Optional[str] = None,
) -> ast.Module:
    """Parses ``source`` (raising SyntaxError exactly as ``compile`` would) and returns the
    instrumented module tree. ``engine`` defaults to ``squall._engine``."""
    tree = compile(source, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    return instrument_tree(tree, filename, module_name, engine, mode)  # type: ignore[return-value]


def compile_instrumented(
    source: Union[str, bytes], filename: str, module_name: str, engine: Any = None,
    mode: Optional[str] = None,
) -> types.CodeType:
    """``instrument_source`` then ``compile``: the code object to exec as the module."""
    tree = instrument_source(source, filename, module_name, engine, mode)
    return bind_entry_constants(compile_tree(tree, filename))


def instrumented_source_text(
    source: Union[str, bytes], filename: str = "<string>", module_name: str = "__main__",
    engine: Any = None, mode: Optional[str] = None,
) -> Optional[str]:
    """The rewritten source as text (for debugging the rewriter). A call of a bound entry point
    (a constant in the code) shows as a call of ``_sq_<entry>_<id>``."""
    tree = instrument_source(source, filename, module_name, engine, mode)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Constant):
            entry = _placeholder_entry(node.func.value)
            if entry is not None:
                node.func = _name("%s_%d" % (ENTRY_NAMES[entry[0]], entry[1]), node.func)
    return ast.unparse(tree)
