"""Live controls of the web UI (``POST /api/control/{action}`` on a ``squall.api.local_connect()``
server): start/stop/clear recording, the modules browser, runtime (un)instrumentation.

The server calls :func:`run` with the GIL held and recording suspended for the call; it returns
JSON text. A ``ValueError`` is a message for the user (the server answers 400 with it)."""

from __future__ import annotations

import json
import sys
import types
from typing import Any, Callable, Dict, List

from squall import api, config

# The order modules are listed in: the user's code first.
_CATEGORY_RANK = {"main": 0, "user": 0, "include": 0, "runtime": 0, "pre-imported": 1, "skip": 1,
                  "skip_regex": 1, "failed": 1, "site-packages": 2, "stdlib": 3, "no-source": 4, "squall": 5}


def _status(_arg: Any) -> Dict[str, Any]:
    stats = api.engine_stats()
    return {"recording": api.is_recording(), "entries": stats.get("entries", 0), "saving_to": api.saving_to()}


def _start(_arg: Any) -> Dict[str, Any]:
    # Resumes recording; the import hook is left as the program set it (instrument modules with
    # the Browser tool).
    api.start_recording(install_hook=False)
    return _status(None)


def _stop(_arg: Any) -> Dict[str, Any]:
    api.stop_recording()
    return _status(None)


def _clear(_arg: Any) -> Dict[str, Any]:
    if api.saving_to():
        raise ValueError("the recording is being saved to a file (%s): it cannot be cleared" % api.saving_to())
    api.clear_recordings()
    return _status(None)


def _is_instrumented(fn: types.FunctionType) -> bool:
    return any(n.startswith("_sq_") for n in fn.__code__.co_names)


def _modules(_arg: Any) -> Dict[str, Any]:
    out: List[Dict[str, Any]] = []
    for name, mod in sorted(list(sys.modules.items())):
        if not isinstance(mod, types.ModuleType):
            continue
        try:
            e = config.explain(name)
        except Exception as ex:  # a module explain cannot judge: still listed
            e = config.Explanation(name, False, "cannot tell: %s" % ex, getattr(mod, "__file__", None), "failed")
        out.append({
            "name": name,
            "file": getattr(mod, "__file__", None),
            "instrumented": bool(e.instrumented),
            "category": e.category,
            "reason": str(e),
        })
    out.sort(key=lambda m: (_CATEGORY_RANK.get(m["category"], 1), m["name"]))
    return {"modules": out}


def _functions(arg: Any) -> Dict[str, Any]:
    from squall._instrument import live

    name = _target(arg, "module")
    mod = sys.modules.get(name)
    if not isinstance(mod, types.ModuleType):
        raise ValueError("no loaded module `%s`" % name)
    fns = [{"qualname": qn, "target": "%s.%s" % (name, qn), "line": f.__code__.co_firstlineno,
            "instrumented": _is_instrumented(f)}
           for qn, f in live._functions_of(mod)]
    fns.sort(key=lambda f: (f["line"], f["qualname"]))
    return {"module": name, "reason": str(config.explain(name)), "functions": fns}


def _target(arg: Any, key: str = "target") -> str:
    t = arg.get(key) if isinstance(arg, dict) else arg
    if not isinstance(t, str) or not t.strip():
        raise ValueError("give the %s as {\"%s\": \"dotted.name\"}" % (key, key))
    return t.strip()


def _report(fn: Callable[[Any], Any], arg: Any) -> Dict[str, Any]:
    target = _target(arg)
    top = target.split(".")[0]
    if top not in sys.modules:
        raise ValueError("no loaded module `%s`: import it first (the Browser lists loaded modules)" % top)
    try:
        r = fn(target)
    except (ValueError, SyntaxError, LookupError, TypeError, AttributeError) as e:
        raise ValueError("%s `%s`: %s" % (fn.__name__, target, e)) from None
    return {"target": r.target, "action": r.action, "swapped": list(r.swapped),
            "reload_needed": list(r.reload_needed), "text": str(r)}


ACTIONS: Dict[str, Callable[[Any], Dict[str, Any]]] = {
    "status": _status,
    "start": _start,
    "stop": _stop,
    "clear": _clear,
    "modules": _modules,
    "functions": _functions,
    "instrument": lambda arg: _report(api.instrument, arg),
    "uninstrument": lambda arg: _report(api.uninstrument, arg),
}


def run(action: str, arg_json: str) -> str:
    """Runs one control action; its argument and result are JSON text."""
    f = ACTIONS.get(action)
    if f is None:
        raise ValueError("unknown control action `%s` (one of: %s)" % (action, ", ".join(ACTIONS)))
    arg = json.loads(arg_json) if arg_json else None
    return json.dumps(f(arg), default=str)
