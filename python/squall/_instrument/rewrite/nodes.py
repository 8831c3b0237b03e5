"""Small AST builders and readers shared by the passes."""

import ast
from typing import Any, List


def _name(id_: str, at: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(id=id_, ctx=ast.Load()), at)


def _const(v: Any, at: ast.AST) -> ast.Constant:
    return ast.copy_location(ast.Constant(value=v), at)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _param_names(args: ast.arguments) -> List[str]:
    names = [a.arg for a in getattr(args, "posonlyargs", [])]
    names += [a.arg for a in args.args]
    if args.vararg is not None:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append(args.kwarg.arg)
    return names
