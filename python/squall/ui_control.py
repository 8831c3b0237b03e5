"""Live controls of the web UI (``POST /api/control/{action}`` on a ``squall.api.local_connect()``
server): start/stop/clear recording, the modules browser, runtime (un)instrumentation.

The server calls :func:`run` with the GIL held and recording suspended for the call; it returns
JSON text. A ``ValueError`` is a message for the user (the server answers 400 with it)."""

from __future__ import annotations

import json
import sys
import threading
import time
import types
from typing import Any, Callable, Dict, List

from squall import api, config
from squall._instrument.rewrite import EXC_NAME, BoundSite

# The order modules are listed in: the user's code first.
_CATEGORY_RANK = {
    "main": 0,
    "user": 0,
    "include": 0,
    "runtime": 0,
    "pre-imported": 1,
    "skip": 1,
    "skip_regex": 1,
    "failed": 1,
    "site-packages": 2,
    "stdlib": 3,
    "no-source": 4,
    "squall": 5,
}


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
    """Rewritten code catches what leaves the function as ``_sq_exc`` (a lambda, with no
    statement to catch in, calls its entry points by name or as constants of its code)."""
    code = fn.__code__
    return (
        EXC_NAME in code.co_varnames
        or any(n.startswith("_sq_") for n in code.co_names)
        or any(_is_entry_point(k) for k in code.co_consts)
    )


def _is_entry_point(k: Any) -> bool:
    """An entry point held as a constant: bound to its site, or the engine's own."""
    return isinstance(getattr(k, "__self__", None), BoundSite) or (
        isinstance(k, types.BuiltinFunctionType) and k.__module__ == "squall._engine"
    )


def _modules(_arg: Any) -> Dict[str, Any]:
    out: List[Dict[str, Any]] = []
    for name, mod in sorted(list(sys.modules.items())):
        if not isinstance(mod, types.ModuleType):
            continue
        try:
            e = config.explain(name)
        except Exception as ex:  # a module explain cannot judge: still listed
            e = config.Explanation(name, False, "cannot tell: %s" % ex, getattr(mod, "__file__", None), "failed")
        out.append(
            {
                "name": name,
                "file": getattr(mod, "__file__", None),
                "instrumented": bool(e.instrumented),
                "category": e.category,
                "reason": str(e),
            }
        )
    out.sort(key=lambda m: (_CATEGORY_RANK.get(m["category"], 1), m["name"]))
    return {"modules": out}


def _functions(arg: Any) -> Dict[str, Any]:
    from squall._instrument import live

    name = _target(arg, "module")
    mod = sys.modules.get(name)
    if not isinstance(mod, types.ModuleType):
        raise ValueError("no loaded module `%s`" % name)
    fns = [
        {
            "qualname": qn,
            "target": "%s.%s" % (name, qn),
            "line": f.__code__.co_firstlineno,
            "instrumented": _is_instrumented(f),
        }
        for qn, f in live._functions_of(mod)
    ]
    fns.sort(key=lambda f: (f["line"], f["qualname"]))
    return {"module": name, "reason": str(config.explain(name)), "functions": fns}


def _target(arg: Any, key: str = "target") -> str:
    t = arg.get(key) if isinstance(arg, dict) else arg
    if not isinstance(t, str) or not t.strip():
        raise ValueError('give the %s as {"%s": "dotted.name"}' % (key, key))
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
    return {
        "target": r.target,
        "action": r.action,
        "swapped": list(r.swapped),
        "reload_needed": list(r.reload_needed),
        "text": str(r),
    }


_REF_KEYS = ("result_ref", "value_ref")

#: Seconds one predicate call may run (default, and the most a caller may ask for).
PREDICATE_SECONDS = 10.0
MAX_PREDICATE_SECONDS = 60.0

# Set by the `predicate_cancel` action (another server thread): the running predicate stops.
_cancel = threading.Event()


class _Stop(BaseException):
    """Raised into a predicate past its deadline or cancelled (a BaseException: the expression's
    own `except Exception` does not swallow it)."""


def _watch(deadline: float) -> Callable[..., Any]:
    """A trace function that stops the predicate's Python code at its deadline or on cancel: the
    check runs at every call and line (loops included) of code the predicate runs. Code stuck in
    one C call (``sum(range(10**12))``) is not interrupted until it returns."""

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if _cancel.is_set() or time.monotonic() > deadline:
            raise _Stop()
        return tracer

    return tracer


def _predicate_cancel(_arg: Any) -> Dict[str, Any]:
    _cancel.set()
    return {"cancelling": True}


def _predicate(arg: Any) -> Dict[str, Any]:
    """Search by predicate: ``expr``, a Python expression over ``v``, evaluated on the recorded
    values (expression results, bindings, returns) of every timeline, in order; bounded by
    ``max_matches`` (default 100) and ``max_values`` (default 100000) evaluated values, and by
    time: ``timeout`` seconds for the call (default 10, at most 60), checked before each value
    and inside the expression's Python code; ``predicate_cancel`` stops it too. Stopped early, the
    answer says why (``stopped``: "timeout" or "cancelled", ``slow_at`` the value being evaluated
    then) and ``next`` resumes after it. Resumes from ``start`` (the ``next`` of a previous
    answer). A syntax error, or an expression that fails on every value it met, is a ValueError
    (400) with the message."""
    import builtins

    from squall import _engine
    from squall.values import safe_repr

    if not isinstance(arg, dict) or not isinstance(arg.get("expr"), str) or not arg["expr"].strip():
        raise ValueError('`predicate` needs {"expr": "<a Python expression over v>"}')
    try:
        code = compile(arg["expr"].strip(), "<predicate>", "eval")
    except SyntaxError as e:
        raise ValueError("bad predicate: %s: %s" % (type(e).__name__, e)) from None
    max_matches = max(1, min(int(arg.get("max_matches", 100)), 10000))
    max_values = max(1, min(int(arg.get("max_values", 100000)), 10000000))
    try:
        seconds = float(arg.get("timeout", PREDICATE_SECONDS))
    except (TypeError, ValueError):
        raise ValueError("`timeout` is a number of seconds, not %r" % (arg.get("timeout"),)) from None
    if not 0 < seconds <= MAX_PREDICATE_SECONDS:
        raise ValueError(
            "`timeout` must be more than 0 and at most %g seconds, not %r" % (MAX_PREDICATE_SECONDS, arg.get("timeout"))
        )
    deadline = time.monotonic() + seconds
    _cancel.clear()
    start = arg.get("start") or [0, 0]
    tl0, idx0 = int(start[0]), int(start[1])
    glb = {"__builtins__": builtins}
    timelines = [(fid, tid) for fid, tids in sorted(_engine.live().all_flows().items()) for tid in tids]
    matches: List[Dict[str, Any]] = []
    scanned = errors = 0
    first_error = None
    nxt = None
    stopped = slow_at = None
    tracer = _watch(deadline)
    for tl in range(tl0, len(timelines)):
        fid, tid = timelines[tl]
        n = _engine.live().timeline_len(fid, tid)
        i = idx0 if tl == tl0 else 0
        while i < n and nxt is None:
            batch = _engine.live().entries(fid, tid, i, min(n, i + 4096))
            for e in batch:
                if scanned >= max_values or len(matches) >= max_matches:
                    nxt = [tl, e["idx"]]
                    break
                if _cancel.is_set() or time.monotonic() > deadline:
                    stopped = "cancelled" if _cancel.is_set() else "timeout"
                    nxt = [tl, e["idx"]]
                    break
                ref = next((e[k] for k in _REF_KEYS if e.get(k) is not None), None)
                if ref is None:
                    continue
                try:
                    v = _engine.live().deref(ref)
                except Exception:  # noqa: BLE001 - a value no longer kept
                    continue
                scanned += 1
                previous = sys.gettrace()
                sys.settrace(tracer)
                try:
                    ok = bool(eval(code, glb, {"v": v}))  # noqa: S307 - the user's own debugger query
                    preview = safe_repr(v)[:200] if ok else None  # a repr is the program's code too
                except _Stop:
                    stopped = "cancelled" if _cancel.is_set() else "timeout"
                    slow_at = {"flow": fid, "thread": tid, "idx": e["idx"]}
                    nxt = [tl, e["idx"] + 1]
                    break
                except Exception as ex:  # noqa: BLE001 - counted, reported
                    errors += 1
                    if first_error is None:
                        first_error = "%s: %s" % (type(ex).__name__, ex)
                    continue
                finally:
                    sys.settrace(previous)
                if ok:
                    matches.append(
                        {
                            "flow": fid,
                            "thread": tid,
                            "idx": e["idx"],
                            "type": e["type"],
                            "symbol": e.get("symbol"),
                            "preview": preview,
                        }
                    )
            i += len(batch) or 1
        if nxt is not None:
            break
    if errors and errors == scanned and stopped is None:
        raise ValueError("the predicate failed on every value (%d): %s" % (errors, first_error))
    return {
        "expr": arg["expr"],
        "matches": matches,
        "scanned": scanned,
        "errors": errors,
        "first_error": first_error,
        "done": nxt is None,
        "next": nxt,
        "stopped": stopped,
        "slow_at": slow_at,
        "timeout": seconds,
    }


ACTIONS: Dict[str, Callable[[Any], Dict[str, Any]]] = {
    "status": _status,
    "start": _start,
    "stop": _stop,
    "clear": _clear,
    "modules": _modules,
    "functions": _functions,
    "instrument": lambda arg: _report(api.instrument, arg),
    "uninstrument": lambda arg: _report(api.uninstrument, arg),
    "predicate": _predicate,
    "predicate_cancel": _predicate_cancel,
}


def run(action: str, arg_json: str) -> str:
    """Runs one control action; its argument and result are JSON text."""
    f = ACTIONS.get(action)
    if f is None:
        raise ValueError("unknown control action `%s` (one of: %s)" % (action, ", ".join(ACTIONS)))
    arg = json.loads(arg_json) if arg_json else None
    return json.dumps(f(arg), default=str)
