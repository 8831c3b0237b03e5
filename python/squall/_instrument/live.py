"""Instrumenting and uninstrumenting code that is already loaded, while the program runs.

FlowStorm makes you reload a namespace after instrumenting it. squall swaps the code instead:
the module's source is rewritten (or compiled plainly, to uninstrument), and every function
already defined from it — module functions, methods, static and class methods, properties,
functions kept in the module's globals — gets the new code object (``func.__code__ = new``).
Calls made from then on are recorded (or no longer are); nothing is re-executed.

Where Python cannot swap, the report says exactly what to reload:

- a function whose new code needs different closure cells (its nested-scope shape changed);
- closures already created from a nested function (``outer.<locals>.inner`` objects alive now
  keep the old code; ones ``outer`` creates after the swap get the new one);
- module-level code, which already ran (``importlib.reload`` the module to record it);
- a module whose source file changed since it was imported (the swap would run code the module
  never had).
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from squall import config as _config

from . import rewrite

__all__ = ["SwapReport", "instrument", "uninstrument"]

# code objects a function had before squall swapped it, to restore exactly: id(func) -> (func, code)
_originals: Dict[int, Tuple[types.FunctionType, types.CodeType]] = {}


@dataclass
class SwapReport:
    """What an instrument/uninstrument call did."""

    target: str
    action: str  # "instrument" | "uninstrument"
    swapped: List[str] = field(default_factory=list)  # qualnames whose code was swapped
    reload_needed: List[str] = field(default_factory=list)  # what to reload, and why

    def __str__(self) -> str:
        lines = [f"squall: {self.action}ed {len(self.swapped)} function(s) of {self.target}"]
        if self.swapped:
            lines.append("  swapped: " + ", ".join(self.swapped))
        for r in self.reload_needed:
            lines.append("  reload needed: " + r)
        return "\n".join(lines)


def _functions_of(module: types.ModuleType) -> Iterator[Tuple[str, types.FunctionType]]:
    """(qualname, function) for every function defined by ``module`` reachable from its globals."""
    seen: set = set()

    def visit(obj: Any, depth: int) -> Iterator[Tuple[str, types.FunctionType]]:
        if id(obj) in seen or depth > 8:
            return
        seen.add(id(obj))
        if isinstance(obj, (staticmethod, classmethod)):
            yield from visit(obj.__func__, depth + 1)
        elif isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                if f is not None:
                    yield from visit(f, depth + 1)
        elif isinstance(obj, types.FunctionType):
            if obj.__module__ == module.__name__:
                yield obj.__qualname__, obj
            wrapped = getattr(obj, "__wrapped__", None)
            if wrapped is not None:
                yield from visit(wrapped, depth + 1)
        elif isinstance(obj, type) and obj.__module__ == module.__name__:
            for v in list(vars(obj).values()):
                yield from visit(v, depth + 1)

    for value in list(vars(module).values()):
        yield from visit(value, 0)


def _code_by_place(code: types.CodeType) -> Dict[Tuple[str, int], types.CodeType]:
    """Every function code object nested in a module's code, by (name, first line)."""
    out: Dict[Tuple[str, int], types.CodeType] = {}
    stack = [code]
    while stack:
        c = stack.pop()
        for const in c.co_consts:
            if isinstance(const, types.CodeType):
                out.setdefault((const.co_name, const.co_firstlineno), const)
                stack.append(const)
    return out


def _module_source(module: types.ModuleType) -> Tuple[str, str, bytes]:
    spec = getattr(module, "__spec__", None)
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        raise ValueError(
            f"`{module.__name__}` has no Python source file ({path or 'builtin'}); squall instruments .py modules"
        )
    loader = getattr(spec, "loader", None)
    try:
        # The bytes, decoded here, so that their hash is of exactly what is compiled.
        if loader is not None and hasattr(loader, "get_data"):
            raw = loader.get_data(path)
        else:
            with open(path, "rb") as f:
                raw = f.read()
        source = importlib.util.decode_source(raw)
    except OSError as e:
        raise ValueError(f"cannot read the source of `{module.__name__}` at {path}: {e}") from None
    return source, path, raw


def _resolve(target: Union[str, types.ModuleType, types.FunctionType]) -> Tuple[List[types.ModuleType], Optional[str]]:
    """The loaded modules a target names, and the qualname when it names one function."""
    if isinstance(target, types.ModuleType):
        return [target], None
    if isinstance(target, (types.FunctionType, types.MethodType, staticmethod, classmethod)):
        func = getattr(target, "__func__", target)
        module = sys.modules.get(func.__module__)
        if module is None:
            raise ValueError(f"the module of {func.__qualname__} ({func.__module__}) is not loaded")
        return [module], func.__qualname__
    if isinstance(target, str):
        if target in sys.modules:
            # a module and, for a package, its loaded submodules: a prefix
            under = [
                m
                for name, m in sorted(sys.modules.items())
                if m is not None and (name == target or name.startswith(target + "."))
            ]
            return under, None
        # "pkg.mod.func" or "pkg.mod.Class.method": the longest loaded module prefix
        parts = target.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod = sys.modules.get(".".join(parts[:i]))
            if mod is not None:
                return [mod], ".".join(parts[i:])
        prefix = [m for name, m in sorted(sys.modules.items()) if m is not None and name.startswith(target + ".")]
        if prefix:
            return prefix, None
        raise ValueError(f"nothing named `{target}` is loaded (a module, a prefix of modules, or module.function)")
    raise TypeError(f"instrument() takes a module, a function, or a dotted name; got {target!r}")


def _swap_module(module: types.ModuleType, qualname: Optional[str], instrumented: bool, report: SwapReport) -> None:
    source, path, raw = _module_source(module)
    name = module.__name__
    if instrumented:
        from squall import _engine

        _engine.note_source(path, raw)
        code = rewrite.compile_instrumented(source, path, name)
        for full, short in rewrite.ENTRY_NAMES.items():
            if hasattr(_engine, full):
                module.__dict__[short] = getattr(_engine, full)
    else:
        code = compile(source, path, "exec", dont_inherit=True)
    new_codes = _code_by_place(code)
    matched_any = False
    replaced: List[types.CodeType] = []
    for qn, func in _functions_of(module):
        # a function, with the functions nested in it (or a class, with its methods)
        if qualname is not None and qn != qualname and not qn.startswith(qualname + "."):
            continue
        old = func.__code__
        new = new_codes.get((old.co_name, old.co_firstlineno))
        if new is None:
            report.reload_needed.append(
                f"{name}.{qn}: its source at {path}:{old.co_firstlineno} changed since it was "
                f"loaded; `importlib.reload({name})` it"
            )
            continue
        matched_any = True
        if new.co_freevars != old.co_freevars:
            report.reload_needed.append(
                f"{name}.{qn}: its new code needs closure cells {new.co_freevars}, it has "
                f"{old.co_freevars}; `importlib.reload({name})` it"
            )
            continue
        if old is new:
            continue
        if instrumented:
            _originals.setdefault(id(func), (func, old))
            func.__code__ = new
        else:
            saved = _originals.pop(id(func), None)
            func.__code__ = saved[1] if saved is not None and saved[0] is func else new
        report.swapped.append(f"{name}.{qn}")
        replaced.append(old)
    _report_live_closures(name, replaced, report)
    if qualname is not None and not matched_any and not report.reload_needed:
        raise ValueError(f"`{name}` has no function `{qualname}` defined in its source")
    if qualname is None and instrumented:
        report.reload_needed.append(
            f"{name}: its module-level code already ran and is not recorded; "
            f"`importlib.reload({name})` to record it too"
        )


def _report_live_closures(module_name: str, replaced: List[types.CodeType], report: SwapReport) -> None:
    """Function objects made earlier from code nested in the replaced functions (closures kept
    somewhere the swap cannot reach) keep the old code."""
    nested = set()
    stack = list(replaced)
    while stack:
        c = stack.pop()
        for const in c.co_consts:
            if isinstance(const, types.CodeType) and const not in nested:
                nested.add(const)
                stack.append(const)
    if not nested:
        return
    alive: Dict[str, int] = {}
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and obj.__code__ in nested:
            alive[obj.__qualname__] = alive.get(obj.__qualname__, 0) + 1
    for qn, n in sorted(alive.items()):
        report.reload_needed.append(
            f"{module_name}.{qn}: {n} closure(s) made before the swap keep their old code; "
            f"the ones made from now on are swapped (re-create them, or reload {module_name})"
        )


def _change(target: Any, instrumented: bool) -> SwapReport:
    modules, qualname = _resolve(target)
    label = (
        target
        if isinstance(target, str)
        else getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
    )
    report = SwapReport(str(label), "instrument" if instrumented else "uninstrument")
    for module in modules:
        if module.__name__ == "squall" or module.__name__.startswith("squall."):
            report.reload_needed.append(f"{module.__name__}: squall never instruments itself")
            continue
        try:
            _swap_module(module, qualname, instrumented, report)
        except (ValueError, SyntaxError) as e:
            if len(modules) == 1:
                raise
            report.reload_needed.append(f"{module.__name__}: {e}")
    if qualname is None and isinstance(target, str):
        # Modules imported from now on follow suit.
        _config.set_runtime_override(target, instrumented)
    return report


def instrument(target: Any) -> SwapReport:
    """Instruments a loaded module, function, method or prefix of modules (a module object, a
    function, or a dotted name) without reloading it; modules under a prefix imported later are
    instrumented too. Returns a report naming what was swapped and what must be reloaded."""
    return _change(target, True)


def uninstrument(target: Any) -> SwapReport:
    """Undoes :func:`instrument` (or the import hook's instrumentation) for a loaded module,
    function or prefix: calls from now on are not recorded."""
    return _change(target, False)
