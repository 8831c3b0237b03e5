"""Pass 2 (full mode), its inserted calls: expression, binding, loop and write entry calls, shared
by its expression and statement halves (``full_exprs``, ``full_stmts``)."""

import ast
import sys
from typing import Any, List, Optional

from .bound import _entry_call
from .ctx import _Ctx, _reads
from .nodes import _const, _name

# Single-name bindings recorded by the call making the value (`x = _sq_bind(S, v)`,
# `for x in _sq_for(S, it)`) rather than by a `_sq_bind(S, x)` statement after the store: the same
# entries, in the same order, with the same sites. False: the statement form (tests compare them).
_FUSE_BINDS = True
# The names one statement binds recorded by one call, `_sq_binds(S, a, b)` (sites S, S+1),
# rather than by a `_sq_bind` per name: the same entries, in the same order, with the same sites.
# False: a `_sq_bind` per name (tests compare them).
_MULTI_BINDS = True
# `for x in _sq_for(S, it)` only before 3.12. From 3.12 on, CPython runs a `for` over a generator
# without a C call (FOR_ITER_GEN pushes the generator's frame), while any iterator wrapper calls
# the generator's __next__ from C, which counts against the C recursion limit: generators
# iterating generators ~750 deep would raise RecursionError on 3.12 where plain Python does not.
# Before 3.12 the loop itself calls __next__ from C: the wrapper adds nothing.
_LOOP_ITER = sys.version_info < (3, 12)


class _FullEntries:
    """The state of the full pass (the form being rewritten, its locals) and the calls it inserts."""

    def __init__(self, ctx: _Ctx, known_fns: frozenset = frozenset()):
        self.ctx = ctx
        self.form: Optional[int] = None
        self.locals: frozenset = frozenset()
        self.lazy = 0
        self.known_fns = known_fns

    # -- helpers
    def _on(self) -> bool:
        return self.form is not None and not self.lazy

    def _wrap(self, node: ast.expr, entry: str = "expr") -> ast.expr:
        """``_sq_expr(SITE, node)``, or through ``entry`` (``recv`` for a receiver)."""
        reads = _reads(node)
        site = self.ctx.register_site(self.form, self.ctx.SITE_EXPR, node, reads=reads)  # type: ignore
        return _entry_call(entry, [_const(site, node), node], node)

    def _bind_call(self, at: ast.AST, name: str, value: ast.expr, src: Optional[ast.AST] = None) -> ast.Call:
        """``_sq_bind(SITE, value)``; ``src``: the expression the bound value comes from."""
        reads = _reads(src)
        site = self.ctx.register_site(self.form, self.ctx.SITE_BIND, at, symbol=name, reads=reads)  # type: ignore
        return _entry_call("bind", [_const(site, at), value], at)

    def _fusable(self, t: Any) -> bool:
        """``t`` is a single name whose binding can be recorded by the call that produces its
        value (``x = _sq_bind(SITE, v)``, ``for x in _sq_for(SITE, it)``)."""
        return _FUSE_BINDS and self._on() and isinstance(t, ast.Name) and not t.id.startswith("_sq_")

    def _loop_iter(self, target: ast.Name, it: ast.expr, loop: ast.AST) -> ast.Call:
        """``_sq_for(SITE, it)`` for the loop (a ``for`` statement or a comprehension) ``loop``.
        The call raises what ``iter(it)`` raises: it takes the location CPython gives its
        ``GET_ITER`` (the loop's, up to 3.12), so tracebacks and their carets stay the same."""
        reads = _reads(it)
        site = self.ctx.register_site(self.form, self.ctx.SITE_BIND, target, symbol=target.id, reads=reads)  # type: ignore
        at = loop
        return _entry_call("loop_iter", [_const(site, at), it], at)

    def _binds(self, nodes: List[Any], src: Optional[ast.AST] = None) -> List[ast.stmt]:
        """The bindings of target nodes (Names, match patterns) as statements: ``_sq_bind(SITE,
        name)`` for one name, ``_sq_binds(SITE, a, b, ...)`` for several; ``src``: the
        expression their values come from."""
        if not self._on():
            return []
        names = []
        for n in nodes:
            name = n.id if isinstance(n, ast.Name) else (n.rest if isinstance(n, ast.MatchMapping) else n.name)
            if not name.startswith("_sq_"):
                names.append((n, name))
        if len(names) == 1:
            n, name = names[0]
            return [ast.copy_location(ast.Expr(value=self._bind_call(n, name, _name(name, n), src=src)), n)]
        call = self._binds_call(names, src=src)
        return [ast.copy_location(ast.Expr(value=call), names[0][0])] if call is not None else []

    def _binds_call(self, names: List[Any], src: Optional[ast.AST] = None) -> Optional[ast.Call]:
        """``_sq_binds(SITE, a, b, ...)`` for ``(node, name)`` pairs, each name's site registered
        in order: one call records what a ``_sq_bind`` per name records (their sites are
        consecutive, which the engine relies on: if another registration came between two,
        a ``_sq_bind`` per name, as a tuple). None for no names."""
        if not names:
            return None
        reads = _reads(src)
        sites = [
            self.ctx.register_site(self.form, self.ctx.SITE_BIND, n, symbol=name, reads=reads)  # type: ignore
            for n, name in names
        ]
        at = names[0][0]
        if _MULTI_BINDS and all(s == sites[0] + i for i, s in enumerate(sites)):
            args: List[ast.expr] = [_const(sites[0], at)] + [_name(name, n) for n, name in names]
            return _entry_call("binds", args, at)
        calls: List[ast.expr] = [
            _entry_call("bind", [_const(s, n), _name(name, n)], n) for s, (n, name) in zip(sites, names)
        ]
        return ast.copy_location(ast.Tuple(elts=calls, ctx=ast.Load()), at)

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
