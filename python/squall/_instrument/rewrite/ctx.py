"""What every pass needs: the engine (``squall._engine`` unless one is passed explicitly), the
module's identity, the engine's FORM/SITE constants."""

import ast
from typing import Any, List, Optional

# Defaults matching _engine.pyi, used if an engine object lacks the constants.
_CONST_DEFAULTS = {
    "FORM_FUNCTION": 0,
    "FORM_GENERATOR": 1,
    "FORM_COROUTINE": 2,
    "FORM_ASYNC_GENERATOR": 3,
    "FORM_LAMBDA": 4,
    "FORM_MODULE": 5,
    "SITE_RETURN": 0,
    "SITE_YIELD": 1,
    "SITE_AWAIT": 2,
    "SITE_EXPR": 3,
    "SITE_BIND": 4,
    "SITE_WRITE": 5,
}


def _default_engine():
    from squall import _engine  # noqa: PLC0415  (imported lazily: the engine may be absent)

    return _engine


class _Ctx:
    """What every pass needs: the engine, the module's identity, the constants."""

    def __init__(self, engine: Any, filename: str, module_name: str):
        self.engine = engine
        self.filename = filename
        self.module_name = module_name
        for k, d in _CONST_DEFAULTS.items():
            setattr(self, k, getattr(engine, k, d))

    def register_form(self, qualname: str, line: int, params: List[str], kind: int) -> int:
        return int(
            self.engine.register_form(self.module_name, qualname, self.filename, line, params, kind)
        )

    def register_site(
        self, form_id: int, kind: int, node: ast.AST, symbol: Optional[str] = None
    ) -> int:
        line = node.lineno
        col = node.col_offset
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = col
        if symbol is None:
            return int(self.engine.register_site(form_id, kind, line, col, end_line, end_col))
        return int(
            self.engine.register_site(form_id, kind, line, col, end_line, end_col, symbol=symbol)
        )


# --- small AST builders ------------------------------------------------------------------------
