"""Pass 2 (full mode), statements: bindings, writes, and the expressions inside each statement."""

import ast
from typing import Any, List

from .bound import _entry_call
from .engines import AUG_OPS
from .full_entries import _LOOP_ITER, _FullEntries
from .nodes import _const
from .scopes import _locals_of, _pattern_names, _pure_binding, _target_names


class _FullStmts(_FullEntries):
    """The statement half of the full pass (``stmts``, one ``s_<Kind>`` per AST node kind)."""

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
        node.value = self.line_expr(node.value)
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
        node.test = self.line_expr(node.test)
        node.body = self.stmts(node.body)
        node.orelse = self.stmts(node.orelse)
        return node

    def s_If(self, node: ast.If) -> Any:
        node.test = self.line_expr(node.test)
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
        node.test = self.line_expr(node.test)
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
            for a in node.names
            if a.name != "*"
        ]
        return [node] + self._binds(names)

    s_ImportFrom = s_Import

    def s_Match(self, node: Any) -> Any:
        node.subject = self.e(node.subject)
        for c in node.cases:  # patterns are never touched
            c.guard = self.e(c.guard)
            c.body = self._binds(_pattern_names(c.pattern, [])) + self.stmts(c.body)
        return node
