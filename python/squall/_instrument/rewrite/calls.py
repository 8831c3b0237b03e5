"""Pass 1 (both modes): calls, returns, unwinds and suspensions of every def and lambda."""

import ast
from typing import Any, List, Optional

from .bound import _entry_call
from .ctx import _Ctx, _reads
from .names import EXC_NAME
from .nodes import _const, _is_docstring, _name, _param_names
from .scopes import _has_own_yield


class _Span:
    """A source range to register a site for (``ctx.register_site`` reads these four)."""

    def __init__(self, lineno: int, col_offset: int, end_lineno: Optional[int], end_col_offset: Optional[int]):
        self.lineno, self.col_offset = lineno, col_offset
        self.end_lineno, self.end_col_offset = end_lineno, end_col_offset


class _Sites(ast.NodeTransformer):
    """Rewrites the return/yield/await sites of ONE function (not of nested scopes)."""

    def __init__(self, ctx: _Ctx, form_id: int, resumable: bool, async_gen: bool, is_async: bool = False):
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
        # `yield from X` / `await X` suspend before delegating; the engine keeps the frame open
        # while a recorded delegate runs in it (crates/squall_python/src/recorder/delegation.rs).
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
        span = _Span(
            start.lineno, start.col_offset, getattr(end, "end_lineno", None), getattr(end, "end_col_offset", None)
        )
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

        sites = _Sites(ctx, form, resumable=is_async or gen, async_gen=is_async and gen, is_async=is_async)
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
            ast.Expr(value=_entry_call("call", [_const(form, first)] + [_name(p, first) for p in params], first)),
            first,
        )
        unwind = ast.copy_location(
            ast.Expr(value=_entry_call("unwind", [_const(form, first), _name(EXC_NAME, first)], first)),
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
        try_ = ast.copy_location(ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[]), first)
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
