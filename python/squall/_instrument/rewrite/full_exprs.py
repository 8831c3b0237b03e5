"""Pass 2 (full mode), expressions: each evaluated sub-expression worth showing is wrapped in
``_sq_expr(SITE, e)``."""

import ast
from typing import Any, List

from .bound import _entry_call
from .full_entries import _LOOP_ITER, _FullEntries
from .nodes import _const
from .scopes import _locals_of, _target_names

_NO_WRAP_UNARY = (ast.USub, ast.UAdd)


class _FullExprs(_FullEntries):
    """The expression half of the full pass (``e``, one ``e_<Kind>`` per AST node kind)."""

    # -- expressions
    def e(self, node: Any, wrap: bool = True, entry: str = "expr") -> Any:
        if node is None:
            return None
        m = getattr(self, "e_" + type(node).__name__, None)
        if m is None:
            return node  # unknown kinds are left alone
        new, worth = m(node)
        if worth and wrap and self._on():
            return self._wrap(new, entry)
        return new

    def receiver(self, node: Any) -> Any:
        """``e(node)`` for the ``x`` of ``x.a``, ``x[k]`` or ``x.m()``, recorded through ``recv``:
        an object already recorded on the thread is kept as a reference to its earlier state
        (crates/squall_python/src/recorder/encode.rs ``encode_receiver``)."""
        return self.e(node, entry="recv")

    def line_expr(self, node: Any) -> Any:
        """``e(node)`` for an expression that is a whole statement or a statement's test
        (``f(x)`` alone on a line, ``if f(x):``, ``while f(x):``, ``assert f(x)``). A call to a
        known function is then recorded too (``_sq_expr(S, f(x))``, its value at the call's
        coordinate): nothing else on that line would say that the line ran (the callee's
        entries are on its own lines), so the gutter's hit count, click-to-jump and next-over
        need it. Inside a larger expression the enclosing expression's entry does that."""
        new = self.e(node)
        if new is node and self._on() and self._known_call(node):
            return self._wrap(new)
        return new

    def _known_call(self, node: Any) -> bool:
        """``node`` is a call to one of this module's plain functions by name (recorded by the
        callee, so ``e`` leaves it unwrapped)."""
        return (
            isinstance(node, ast.Call)
            and getattr(node, "_sq_entry", None) is None
            and isinstance(node.func, ast.Name)
            and node.func.id in self.known_fns
            and node.func.id not in self.locals
        )

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
        node.value = self.receiver(node.value)
        return node, isinstance(node.ctx, ast.Load)

    def e_Subscript(self, node: ast.Subscript) -> Any:
        node.value = self.receiver(node.value)
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
            isinstance(f, ast.Name)
            and f.id == "setattr"
            and f.id not in self.locals
            and not self.ctx.setattr_rebound
            and self._on()
            and len(node.args) == 3
            and not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            # `setattr(o, n, v)` -> `_sq_wsetattr(S, o, n, v)`: same operands, same order, the
            # same store (PyObject_SetAttr) and the same None back.
            site = self.ctx.register_site(self.form, self.ctx.SITE_WRITE, node)  # type: ignore
            args = [self.e(a) for a in node.args]
            return _entry_call("wsetattr", [_const(site, node)] + args, node), False
        if isinstance(f, ast.Attribute):  # a method call: the receiver, never `obj.meth`
            f.value = self.receiver(f.value)
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
                call = self._binds_call([(n, n.id) for n in _target_names(g.target, []) if not n.id.startswith("_sq_")])
                if call is not None:
                    # `if _sq_binds(S, k, v)`: True whatever the values are (their truth is never
                    # asked), as is the non-empty tuple `if (_sq_bind(S1, k), _sq_bind(S2, v))`
                    binds = [call]
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
