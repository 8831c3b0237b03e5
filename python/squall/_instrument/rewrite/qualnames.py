"""Pass 0: CPython's ``__qualname__`` of every def, lambda and class, for the forms."""

import ast
import sys
from typing import Any, List

from .scopes import _scope_globals

_PY312 = sys.version_info >= (3, 12)


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
