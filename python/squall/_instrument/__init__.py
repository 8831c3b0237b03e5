"""squall's instrumenter: the source rewriter (``rewrite``), the import hook (``hook``) and an
instrumented interactive console (``repl``)."""

from .rewrite import compile_instrumented, instrument_source

__all__ = ["compile_instrumented", "instrument_source"]
