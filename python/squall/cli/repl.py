"""``squall repl`` (an instrumented console with recording on) and the console of ``squall run -i``."""

from __future__ import annotations

import builtins
import sys

from .lifecycle import _setup_recording
from .options import _version
from .runner import _fresh_main


def _console_namespace() -> dict:
    ns: dict = {"__name__": "__console__", "__doc__": None}
    for name in ("squall", "squall.api", "squall.indexes", "squall.values"):
        try:
            __import__(name)
        except Exception:
            pass
    import importlib

    for short, full in (
        ("squall", "squall"),
        ("api", "squall.api"),
        ("indexes", "squall.indexes"),
        ("values", "squall.values"),
    ):
        try:
            ns[short] = importlib.import_module(full)
        except Exception:
            pass
    return ns


def _interact(ns: dict, banner: str) -> None:
    try:
        from squall._instrument import repl as _repl

        interact = getattr(_repl, "interact", None)
    except ImportError:
        interact = None
    if interact is not None:
        try:
            interact(local=ns, banner=banner)
            return
        except TypeError:
            interact(ns)
            return
    import code

    try:
        import readline  # noqa: F401 - line editing for the console
    except ImportError:
        pass
    code.interact(banner=banner, local=ns, exitmsg="")


def cmd_repl(opts) -> int:
    _setup_recording(opts)
    sys.argv[:] = [""]
    if sys.path and sys.path[0] != "":
        sys.path[0] = ""
    ns = _console_namespace()
    ns["__name__"] = "__main__"
    main = _fresh_main({"__name__": "__main__", "__doc__": None, "__builtins__": builtins})
    main.__dict__.update(ns)
    sys.modules["__main__"] = main
    _interact(
        main.__dict__,
        banner=(
            f"squall {_version()} on Python {sys.version.split()[0]}: recording is on.\n"
            "Query it with indexes.all_flows(), indexes.fn_call_stats(0), indexes.exceptions(); "
            "values.deref_val_id(ref)."
        ),
    )
    return 0
