"""The statement put at the top of every rewritten module: it makes the entry points reachable."""

import ast
from typing import List

from .ctx import _Ctx
from .engines import _engine_key
from .names import ENTRY_NAMES
from .nodes import _is_docstring


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
        args=[ast.Constant(value=__package__)],
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
        target = ast.Tuple(elts=[ast.Name(id=v, ctx=ast.Store()) for v in ENTRY_NAMES.values()], ctx=ast.Store())
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
        i < len(body) and isinstance(body[i], ast.ImportFrom) and body[i].module == "__future__"  # type: ignore[attr-defined]
    ):
        i += 1
    return i
