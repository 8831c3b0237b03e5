"""The import hook: rewrites the user's modules as they are imported.

A ``sys.meta_path`` finder placed first asks the other finders for a module's spec; when the
loader is a plain ``SourceFileLoader`` and the config says "instrument", it swaps in
``InstrumentingLoader``, whose ``get_code`` rewrites and compiles the source and never reads or
writes ``__pycache__`` (instrumented bytecode must never land in a pyc an unrecorded run loads).
"""

import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
from typing import Any, Optional, Set

from squall import config as _config

from . import rewrite

__all__ = [
    "install",
    "uninstall",
    "is_installed",
    "InstrumentingLoader",
    "SquallFinder",
    "compile_main",
    "run_main",
]

_state_lock = threading.RLock()
_finder: Optional["SquallFinder"] = None
_warned: Set[Any] = set()
_local = threading.local()


def _warn_once(module: str, err: BaseException) -> None:
    with _state_lock:
        if module in _warned:
            return
        _warned.add(module)
    msg = "%s: %s" % (type(err).__name__, err)
    sys.stderr.write("squall: could not instrument %s (%s); it runs unrecorded\n" % (module, msg))


def _note_source(path: str, source: Any, engine: Any) -> None:
    """Tells the real engine the size and hash of exactly the bytes compiled for ``path``."""
    if engine is not None or not isinstance(source, (bytes, bytearray)):
        return
    try:
        from squall import _engine

        _engine.note_source(path, bytes(source))
    except Exception as e:  # noqa: BLE001 - never break the import over a hash
        with _state_lock:
            if ("hash", path) in _warned:
                return
            _warned.add(("hash", path))
        sys.stderr.write(
            "squall: could not store the hash of %s (%s: %s); its source will show as unverified\n"
            % (path, type(e).__name__, e)
        )


def _instrumented_code(source: Any, path: str, module_name: str, engine: Any = None, mode: Optional[str] = None):
    """The instrumented code (entry point placeholders in: see ``rewrite.bind_entry_constants``),
    or None if rewriting failed for a reason other than a SyntaxError
    of the user's source (which propagates, as it would without squall)."""
    try:
        tree = compile(source, path, "exec", 0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    except SyntaxError:
        raise
    try:
        rewrite.instrument_tree(tree, path, module_name, engine, mode)
        return rewrite.compile_tree(tree, path)
    except Exception as e:  # noqa: BLE001 - a rewriter bug must not break the program
        _warn_once(module_name, e)
        _config.remember(
            _config.Explanation(
                module_name,
                False,
                "squall failed to instrument it (%s: %s); it runs unrecorded" % (type(e).__name__, e),
                path,
                "failed",
            )
        )
        return None


class InstrumentingLoader(importlib.machinery.SourceFileLoader):
    """A SourceFileLoader that rewrites the source and bypasses the bytecode cache."""

    engine: Any = None  # an explicit engine object (tests); None: squall._engine
    mode: Optional[str] = None  # "full" | "calls"; None: the current config's mode for the module

    def get_code(self, fullname: Optional[str] = None):  # type: ignore[override]
        name = fullname or self.name
        path = self.get_filename(name)
        source = self.get_data(path)
        _note_source(path, source, self.engine)
        if self.engine is None:
            from . import cache

            code = cache.cached_or_instrument(
                source,
                path,
                name,
                self.mode or "full",
                lambda: _instrumented_code(source, path, name, self.engine, self.mode),
            )
        else:
            code = _instrumented_code(source, path, name, self.engine, self.mode)
        if code is None:
            return compile(source, path, "exec", dont_inherit=True)
        # The code cache keeps the entry point placeholders; the callables go in here.
        return rewrite.bind_entry_constants(code)

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:  # never a pyc
        return None


class SquallFinder:
    """The ``sys.meta_path`` finder placed first while the hook is installed."""

    def __init__(self, cfg: Optional[_config.Config] = None, engine: Any = None):
        self.cfg = cfg
        self.engine = engine

    def config(self) -> _config.Config:
        return self.cfg if self.cfg is not None else _config.current()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if getattr(_local, "busy", False):
            return None
        _local.busy = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self or isinstance(finder, SquallFinder):
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
            if spec is None:
                return None
            loader = spec.loader
            if type(loader) is not importlib.machinery.SourceFileLoader:
                return spec
            origin = spec.origin
            decision = self.config().decide(fullname, origin)
            _config.remember(decision)
            if not decision.instrumented:
                return spec
            new_loader = InstrumentingLoader(fullname, origin)
            new_loader.engine = self.engine
            new_loader.mode = self.config().mode_for(fullname)
            spec.loader = new_loader
            return spec
        finally:
            _local.busy = False

    def invalidate_caches(self) -> None:
        pass


# --- runpy.run_path ------------------------------------------------------------------------------
#
# ``runpy.run_path(file)`` compiles the file itself (``runpy._get_code_from_file``), past the
# import system: while the hook is installed that function is replaced by one that instruments
# the source when the config says so for the module named after the file (``tool.py`` ->
# ``tool``), as an import of it would be. A directory or zip file runs its ``__main__`` through
# the import system, which the finder already sees; ``runpy.run_module`` too.

_runpy_original: Any = None


def _run_path_code(*args: Any) -> Any:
    """``runpy._get_code_from_file(run_name, fname)`` (``(fname)`` from 3.13 on), instrumented."""
    fname = args[-1]
    code = None
    finder = _finder
    if finder is not None:
        try:
            code = _instrumented_run_path_code(fname, finder)
        except SyntaxError:
            raise  # the program's own error, raised as runpy would
        except Exception:  # noqa: BLE001 - runpy's own compile below
            code = None
    if code is None:
        return _runpy_original(*args)
    return (code, fname) if len(args) == 2 else code


def _instrumented_run_path_code(fname: Any, finder: "SquallFinder") -> Optional[types.CodeType]:
    path = os.path.abspath(os.fsdecode(fname))
    name = os.path.splitext(os.path.basename(path))[0]
    if not path.endswith(".py"):
        return None
    cfg = finder.config()
    decision = _config.remember(cfg.decide(name, path))
    if not decision.instrumented:
        return None
    import io

    with io.open_code(path) as f:
        source = f.read()
    if source[:4] == importlib.util.MAGIC_NUMBER:
        return None  # a pyc: runpy runs it as it is
    code = _instrumented_code(source, os.fsdecode(fname), name, finder.engine, cfg.mode_for(name))
    return None if code is None else rewrite.bind_entry_constants(code)


def _patch_runpy(on: bool) -> None:
    global _runpy_original
    import runpy

    current = getattr(runpy, "_get_code_from_file", None)
    if on and current is not None and current is not _run_path_code:
        _runpy_original = current
        runpy._get_code_from_file = _run_path_code  # type: ignore[attr-defined]
    elif not on and current is _run_path_code and _runpy_original is not None:
        runpy._get_code_from_file = _runpy_original  # type: ignore[attr-defined]


def install(cfg: Optional[_config.Config] = None, engine: Any = None) -> "SquallFinder":
    """Puts the finder first on ``sys.meta_path`` (replacing a previous squall finder).
    ``cfg`` None: use ``config.current()`` at each import."""
    global _finder
    with _state_lock:
        uninstall()
        _finder = SquallFinder(cfg, engine)
        sys.meta_path.insert(0, _finder)
        _patch_runpy(True)
        return _finder


def uninstall() -> None:
    global _finder
    with _state_lock:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, SquallFinder)]
        _finder = None
        _patch_runpy(False)


def is_installed() -> bool:
    return any(isinstance(f, SquallFinder) for f in sys.meta_path)


_config._hook_installed = is_installed


# --- the script itself -------------------------------------------------------------------------


def compile_main(source: Any, path: str, cfg: Optional[_config.Config] = None, engine: Any = None) -> types.CodeType:
    """Code for the ``__main__`` script at ``path``: instrumented if the config allows, else a
    plain compile. SyntaxErrors of the source propagate as usual."""
    cfg = cfg or _config.current()
    decision = _config.remember(cfg.decide("__main__", path))
    if decision.instrumented:
        _note_source(path, source, engine)
        code = _instrumented_code(source, path, "__main__", engine, cfg.mode_for("__main__"))
        if code is not None:
            return rewrite.bind_entry_constants(code)
    return compile(source, path, "exec", dont_inherit=True)


def run_main(
    path: str,
    argv: Optional[list] = None,
    cfg: Optional[_config.Config] = None,
    engine: Any = None,
) -> dict:
    """Runs the script at ``path`` as ``__main__`` (like ``python path``), instrumented; returns
    its globals. Sets ``sys.argv`` and ``sys.path[0]`` as Python does."""
    path = os.path.abspath(path)
    with open(path, "rb") as f:
        source = f.read()
    code = compile_main(source, path, cfg, engine)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    main.__spec__ = None
    main.__loader__ = None
    sys.modules["__main__"] = main
    sys.argv[:] = [path] + list(argv or [])
    sys.path.insert(0, os.path.dirname(path))
    exec(code, main.__dict__)
    return main.__dict__
