"""Predicates over a recorded call, for ``calls --where`` (API, ``squall query``, MCP): a small
expression language read with :mod:`ast` and evaluated here, never by ``eval``: an agent's
text runs no code of its own and none of the program's (recorded values are squall's
snapshots, see :mod:`squall.values`).

Names: the call's parameters, ``ret`` (what it returned; None if it raised), ``raised`` (the
exception's ``Type: message`` text, None if it returned). Allowed: constants, comparisons
(``== != < <= > >= in not in is is not``), ``and or not``, arithmetic (``+ - * / // %``),
attributes (``item.price``; no ``_`` names), items with constant keys (``d['k']``, ``xs[0]``),
and ``len(x)``, ``abs(x)``, ``str(x)``, ``type_name(x)``. Examples: ``weight == 10``,
``ret > 50``, ``raised is not None``, ``'JP' in str(invoice)``, ``len(items) == 0``.

The web UI's custom power step uses the same language over one entry
(``crates/squall_python/src/bindings/ui_predicate.rs``): names ``v`` (the entry's value), ``kind``
(``'expr'``, ``'bind'``, ``'fn-return'``, ``'fn-unwind'``, ``'write'``), ``name`` (the name
bound or attribute written, else None) and ``fn`` (the function's qualified name).
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable, Dict, FrozenSet

__all__ = ["Predicate", "PredicateError", "compile_predicate"]

_CMP: Dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_BIN: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _type_name(v: Any) -> str:
    return getattr(v, "type_name", None) or type(v).__name__


_FUNCS: Dict[str, Callable[[Any], Any]] = {"len": len, "abs": abs, "str": str, "type_name": _type_name}


class PredicateError(ValueError):
    """A predicate that cannot be read or uses something the language does not have."""


class Predicate:
    """A compiled predicate: call it with the call's names. ``reads`` holds the names it reads
    (function names of ``len(x)`` and the like aside), so a caller builds only those values:
    every other name may be given as None."""

    def __init__(self, run: Callable[[Dict[str, Any]], bool], reads: FrozenSet[str]) -> None:
        self._run = run
        self.reads = reads

    def __call__(self, names: Dict[str, Any]) -> bool:
        return self._run(names)


def _names_read(node: ast.AST) -> FrozenSet[str]:
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in called)


_EXAMPLES = {"call": "`weight == 10` or `ret > 50`", "entry": "`v > 3` or `len(v) == 0`"}


def compile_predicate(text: str, subject: str = "call") -> Predicate:
    """The predicate ``text`` as a function of the call's names (see the module doc). Raises
    :class:`PredicateError` quoting what is wrong and what to write instead; ``subject``: what
    the names belong to, as errors say it (``call``, or ``entry`` for the UI's power step)."""
    if not isinstance(text, str) or not text.strip():
        raise PredicateError(
            f"the predicate is empty: write a condition such as {_EXAMPLES.get(subject, _EXAMPLES['call'])}"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        example = _EXAMPLES.get(subject, _EXAMPLES["call"])
        raise PredicateError(f"{text!r} is not an expression ({e.msg}); write e.g. {example}") from None
    _check(tree.body, text)

    def run(names: Dict[str, Any]) -> bool:
        try:
            return bool(_eval(tree.body, names))
        except _Unknown as e:
            known = ", ".join(sorted(names)) or "none"
            raise PredicateError(
                f"{text!r} names {e.args[0]!r}, which this {subject} does not have; its names are {known}"
            ) from None
        except Exception:  # noqa: BLE001 - a comparison of unlike values is simply false
            return False

    return Predicate(run, _names_read(tree.body))


class _Unknown(Exception):
    pass


def _check(node: ast.AST, text: str) -> None:
    allowed = (
        ast.Expression,
        ast.Constant,
        ast.Name,
        ast.Load,
        ast.Compare,
        ast.BoolOp,
        ast.And,
        ast.Or,
        ast.UnaryOp,
        ast.Not,
        ast.USub,
        ast.BinOp,
        ast.Attribute,
        ast.Subscript,
        ast.Call,
        ast.Tuple,
        ast.List,
        *_CMP,
        *_BIN,
    )
    for n in ast.walk(node):
        if not isinstance(n, allowed):
            raise PredicateError(
                f"{text!r} uses {type(n).__name__}, which predicates do not have; "
                "use comparisons, and/or/not, arithmetic, attributes, constant items and "
                "len/abs/str/type_name"
            )
        if isinstance(n, ast.Attribute) and n.attr.startswith("_"):
            raise PredicateError(f"{text!r} reads attribute {n.attr!r}: names starting with '_' are not allowed")
        if isinstance(n, ast.Subscript):
            key = n.slice.value if isinstance(n.slice, ast.Index) else n.slice  # type: ignore[attr-defined]
            if not isinstance(key, ast.Constant):
                raise PredicateError(f"{text!r}: an item key must be a constant (`d['k']`, `xs[0]`)")
        if isinstance(n, ast.Call):
            if not isinstance(n.func, ast.Name) or n.func.id not in _FUNCS or n.keywords or len(n.args) != 1:
                raise PredicateError(f"{text!r} calls something other than len(x), abs(x), str(x), type_name(x)")


def _eval(n: ast.AST, names: Dict[str, Any]) -> Any:
    if isinstance(n, ast.Constant):
        return n.value
    if isinstance(n, ast.Name):
        if n.id in names:
            return names[n.id]
        if n.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[n.id]
        raise _Unknown(n.id)
    if isinstance(n, (ast.Tuple, ast.List)):
        return tuple(_eval(x, names) for x in n.elts)
    if isinstance(n, ast.Compare):
        left = _eval(n.left, names)
        for op, right_node in zip(n.ops, n.comparators):
            right = _eval(right_node, names)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(n, ast.BoolOp):
        if isinstance(n.op, ast.And):
            return all(_eval(v, names) for v in n.values)
        return any(_eval(v, names) for v in n.values)
    if isinstance(n, ast.UnaryOp):
        v = _eval(n.operand, names)
        return (not v) if isinstance(n.op, ast.Not) else -v
    if isinstance(n, ast.BinOp):
        op = _BIN[type(n.op)]
        return op(_eval(n.left, names), _eval(n.right, names))
    if isinstance(n, ast.Attribute):
        v = _eval(n.value, names)
        return v.get(n.attr) if isinstance(v, dict) else getattr(v, n.attr)
    if isinstance(n, ast.Subscript):
        key = n.slice.value if isinstance(n.slice, ast.Index) else n.slice  # type: ignore[attr-defined]
        return _eval(n.value, names)[key.value]
    if isinstance(n, ast.Call):
        fn = _FUNCS[n.func.id]  # type: ignore[attr-defined]
        return fn(_eval(n.args[0], names))
    raise _Unknown(type(n).__name__)
