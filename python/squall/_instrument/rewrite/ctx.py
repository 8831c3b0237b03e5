"""What every pass needs: the engine (``squall._engine`` unless one is passed explicitly), the
module's identity, the engine's FORM/SITE constants."""

import ast
from typing import Any, List, Optional

#: The engine's FORM/SITE constants every pass reads (exported from the core's enums,
#: ``FormKind::ALL`` / ``SiteKind::ALL``).
_CONSTANTS = (
    "FORM_FUNCTION",
    "FORM_GENERATOR",
    "FORM_COROUTINE",
    "FORM_ASYNC_GENERATOR",
    "FORM_LAMBDA",
    "FORM_MODULE",
    "SITE_RETURN",
    "SITE_YIELD",
    "SITE_AWAIT",
    "SITE_EXPR",
    "SITE_BIND",
    "SITE_WRITE",
)


def _default_engine():
    from squall import _engine  # noqa: PLC0415  (imported lazily: the engine may be absent)

    return _engine


class _Ctx:
    """What every pass needs: the engine, the module's identity, the constants."""

    def __init__(self, engine: Any, filename: str, module_name: str):
        self.engine = engine
        self.filename = filename
        self.module_name = module_name
        for k in _CONSTANTS:
            # An explicit engine without the constants (a test's) uses the real engine's.
            setattr(self, k, getattr(engine, k) if hasattr(engine, k) else getattr(_default_engine(), k))

    def register_form(self, qualname: str, line: int, params: List[str], kind: int) -> int:
        return int(self.engine.register_form(self.module_name, qualname, self.filename, line, params, kind))

    def register_site(
        self,
        form_id: int,
        kind: int,
        node: ast.AST,
        symbol: Optional[str] = None,
        reads: Optional[tuple] = None,
    ) -> int:
        line = node.lineno
        col = node.col_offset
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = col
        if reads is not None:
            return int(self.engine.register_site(form_id, kind, line, col, end_line, end_col, symbol, reads))
        if symbol is None:
            return int(self.engine.register_site(form_id, kind, line, col, end_line, end_col))
        return int(self.engine.register_site(form_id, kind, line, col, end_line, end_col, symbol=symbol))


def _reads(value: Optional[ast.AST]) -> Optional[tuple]:
    """What a site's value is computed from, for ``origin`` (``squall_trace::SiteReads``): the
    value expression's range; the names it loads and the functions it calls by name (``f(...)``,
    ``obj.f(...)``), each once, never squall's own ``_sq_`` names; the attribute it reads if it
    is ``obj.attr`` (``[]`` for ``obj[key]``)."""
    if value is None or getattr(value, "lineno", None) is None:
        return None
    names: List[str] = []
    for n in ast.walk(value):
        name = None
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            name = n.id
        elif isinstance(n, ast.Call) and getattr(n, "_sq_entry", None) is None:
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name is not None and not name.startswith("_sq_") and name not in names:
            names.append(name)
    attr = value.attr if isinstance(value, ast.Attribute) else "[]" if isinstance(value, ast.Subscript) else None
    end_line = getattr(value, "end_lineno", None) or value.lineno
    end_col = getattr(value, "end_col_offset", None)
    return (value.lineno, value.col_offset, end_line, value.col_offset if end_col is None else end_col, names, attr)


# --- small AST builders ------------------------------------------------------------------------
