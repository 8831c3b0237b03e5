"""What a scope binds and evaluates: the analyses the passes share (own-scope nodes, locals,
globals, binding targets)."""

import ast
import sys
from typing import List

from .nodes import _param_names

_PY310 = sys.version_info >= (3, 10)

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
