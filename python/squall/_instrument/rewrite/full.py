"""Pass 2 (full mode): expressions, bindings and writes inside instrumented functions."""

import ast
from typing import Dict, List

from .ctx import _Ctx
from .full_exprs import _FullExprs
from .full_stmts import _FullStmts
from .scopes import _has_own_yield


class _Full(_FullExprs, _FullStmts):
    """Records every evaluated sub-expression (``_sq_expr(SITE, e)``) and every local binding
    (``_sq_bind(SITE, name)``) inside instrumented functions and lambdas. Runs after the calls
    pass, whose inserted nodes it recognises (``_sq_entry``) and leaves alone. Nothing is recorded
    at module level or in class bodies (no frame to record into), nor in the lazily evaluated
    parts of generator expressions (they run whenever the consumer pulls, possibly inside another
    recorded frame)."""


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
