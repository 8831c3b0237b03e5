"""An interactive console whose inputs are instrumented as module ``__main__``: functions typed at
the prompt are recorded like any other user code."""

import ast
import code
import codeop
import sys
from typing import Any, Optional

from . import rewrite

__all__ = ["InstrumentedCompiler", "InstrumentedConsole", "interact"]


class InstrumentedCompiler:
    """Drop-in for ``codeop.CommandCompiler``: same completeness rules and ``__future__``
    tracking, but the code it returns is instrumented."""

    def __init__(self, module_name: str = "__main__", engine: Any = None):
        self._check = codeop.CommandCompiler()
        self.module_name = module_name
        self.engine = engine

    def __call__(self, source: str, filename: str = "<input>", symbol: str = "single"):
        plain = self._check(source, filename, symbol)  # None: incomplete; raises on bad input
        if plain is None:
            return None
        flags = self._check.compiler.flags
        try:
            tree = compile(source, filename, symbol, flags | ast.PyCF_ONLY_AST, dont_inherit=True)
            rewrite.instrument_tree(tree, filename, self.module_name, self.engine)
            return rewrite.bind_entry_constants(rewrite.compile_tree(tree, filename, symbol, flags))
        except SyntaxError:
            return plain
        except Exception as e:  # noqa: BLE001 - never lose the user's input
            sys.stderr.write("squall: could not instrument this input (%s); it runs unrecorded\n" % e)
            return plain


class InstrumentedConsole(code.InteractiveConsole):
    def __init__(self, locals: Optional[dict] = None, filename: str = "<console>", engine: Any = None):
        if locals is None:
            main = sys.modules.get("__main__")
            locals = main.__dict__ if main is not None else {"__name__": "__main__"}
        super().__init__(locals, filename)
        self.compile = InstrumentedCompiler("__main__", engine)


def interact(banner: Optional[str] = None, local: Optional[dict] = None, engine: Any = None) -> None:
    """Runs an instrumented REPL (like ``python -i``), recording functions typed at the prompt."""
    if banner is None:
        banner = "squall %s on Python %s — functions you define here are recorded.\n" % (
            _version(),
            sys.version.split()[0],
        )
    InstrumentedConsole(local, engine=engine).interact(banner=banner, exitmsg="")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("squall")
    except Exception:
        return ""
