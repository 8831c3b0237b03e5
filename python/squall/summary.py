"""The short summary of a recording that ``squall run`` prints to stderr at the end.

``render_summary()`` only reads: it asks ``squall.indexes`` / ``squall.api`` / ``squall.config``
and formats. Every part is guarded, so a missing piece says so instead of failing the run.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterable, Optional

TOP_FUNCTIONS = 10
MAX_EXCEPTIONS = 10


def _try(fn: Callable[[], Any], default: Any = None) -> Any:
    try:
        return fn()
    except Exception:
        return default


def _short(text: Any, width: int = 100) -> str:
    s = str(text).replace("\n", " ")
    return s if len(s) <= width else s[: width - 3] + "..."


def _qualified(ns: Any, name: Any) -> str:
    if ns:
        return f"{ns}.{name}"
    return str(name)


def render_summary(
    title: str = "squall",
    uncaught: Optional[Iterable[BaseException]] = None,
    saved_to: Optional[str] = None,
    save_error: Optional[str] = None,
) -> str:
    """Returns the summary text (several lines, no trailing newline).

    ``uncaught``: the exceptions the runner saw leave the program (the main thread's and the
    threads'), when it knows them. Then every other recorded exception was caught somewhere, even
    where the catching frame was not recorded (module level, uninstrumented code).
    ``save_error``: why saving to a file failed (the file is then cut short where it failed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "nothing recorded" is said below, plainly
        return _render(title, uncaught, saved_to, save_error)


def _render(
    title: str, uncaught: Optional[Iterable[BaseException]], saved_to: Optional[str], save_error: Optional[str] = None
) -> str:
    try:
        from squall import indexes
    except Exception as e:  # pragma: no cover - the engine is not built
        return f"{title}: no recording available ({type(e).__name__}: {e})"
    try:
        from squall import api
    except Exception:  # pragma: no cover
        api = None  # type: ignore[assignment]

    out: list[str] = []
    w = out.append
    w(f"--- {title}: recording summary ---")
    if saved_to:
        w(f"recording saved to {saved_to}")
        w(f"  open it: squall info {saved_to}   |   python -c \"import squall; rec = squall.load('{saved_to}')\"")
    elif save_error:
        w(f"recording NOT saved completely: {save_error}")
        w("  `squall info FILE` says what the file holds and where it ends")
    else:
        w(
            "The recording lives in this process's memory and ends with it (not saved: --no-save); "
            "run with -i to query it (indexes, values) before it is gone."
        )

    flows = _try(indexes.all_flows, None)
    if flows is None:
        w("flows: unavailable")
        flows = {}
    stats = _try(api.engine_stats, {}) if api is not None else {}
    total_entries = 0

    if not flows:
        w("flows: none recorded (was anything instrumented? see skipped modules below)")
    for flow_id in sorted(flows):
        infos = _try(lambda flow_id=flow_id: indexes.flow_threads_info(flow_id), []) or []
        w(f"flow {flow_id}: {len(infos) or len(flows[flow_id])} thread(s)")
        for t in infos:
            entries = t.get("entries", 0) or 0
            total_entries += entries
            w(
                f"  thread {t.get('thread_id')} {t.get('thread_name') or '?'!s:<20} "
                f"{entries:>9} entries {t.get('calls', 0) or 0:>8} calls"
            )
    if isinstance(stats, dict) and "entries" in stats:
        total_entries = stats["entries"]
    line = f"total entries: {total_entries}"
    if isinstance(stats, dict) and stats.get("bytes"):
        line += f" (~{_human_bytes(stats['bytes'])} in memory)"
    w(line)

    # Most-called functions, over all flows and threads.
    counts: dict[str, int] = {}
    for flow_id in sorted(flows):
        for s in _try(lambda flow_id=flow_id: indexes.fn_call_stats(flow_id), []) or []:
            key = _qualified(s.get("fn_ns"), s.get("fn_name"))
            counts[key] = counts.get(key, 0) + (s.get("cnt", 0) or 0)
    if counts:
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FUNCTIONS]
        width = max(len(k) for k, _ in top)
        w(f"most called functions (top {len(top)} of {len(counts)}):")
        for key, cnt in top:
            w(f"  {key:<{width}}  {cnt}")

    excs = _try(lambda: indexes.exceptions(), None)
    if excs:
        w(f"exceptions ({len(excs)}):")
        # By recorded identity and, where it can be had without running the program's code,
        # message: where exceptions' deaths are not tracked (3.9), a freed exception's id can
        # come back for a later one.
        escaped = None
        if uncaught is not None:
            ids = [(_engine_id(x), x) for x in uncaught]
            escaped = {i: _own_text(x) for i, x in ids if i is not None}
        for e in excs[:MAX_EXCEPTIONS]:
            state = _caught_state(e, escaped)
            msg = _short(e.get("message", ""))
            w(
                f"  {e.get('exc_type')}: {msg}  in {_qualified(e.get('fn_ns'), e.get('fn_name'))}"
                f"  [{state}; flow {e.get('flow_id')} thread {e.get('thread_id')} "
                f"idx {e.get('idx')}]"
            )
        if len(excs) > MAX_EXCEPTIONS:
            w(f"  ... and {len(excs) - MAX_EXCEPTIONS} more (indexes.exceptions())")
    elif excs is not None:
        w("exceptions: none")

    hits = _try(api.limits_hit, []) if api is not None else []
    if hits:
        w("LIMITS HIT (recording is incomplete):")
        for h in hits:
            line = "  " + ", ".join(f"{k}={v}" for k, v in h.items())
            if h.get("limit") == "memory_limit" and isinstance(h.get("value"), int):
                line += (
                    f" ({h['value'] / 2**20:g} MiB: recording stopped everywhere there, the program went on;"
                    " raise it with --memory-limit MIB)"
                )
            w(line)

    dropped = stats.get("dropped", 0) if isinstance(stats, dict) else 0
    if dropped:
        w(f"DROPPED EVENTS: {dropped} (the engine failed to record them; see engine_stats())")

    skipped = _skipped_modules()
    if skipped:
        w(f"user modules NOT instrumented ({len(skipped)}; nothing in them is recorded):")
        for m in skipped[:20]:
            w(f"  {m}")
        if len(skipped) > 20:
            w(f"  ... and {len(skipped) - 20} more (squall.config.skipped_user_modules())")
    return "\n".join(out)


def _caught_state(e: dict, escaped: Optional[dict]) -> str:
    caught = bool(e.get("caught"))
    if escaped is not None and not caught:
        # The recorded exception (identity, message: the core's) against those that escaped.
        obj_id = e.get("obj_id") or None
        caught = obj_id not in escaped or not _same_text(escaped[obj_id], e.get("message", ""))
    if not caught:
        return "NOT caught"
    where = e.get("caught_in")
    return f"caught in {where}" if where else "caught"


def _same_text(escaped: Optional[str], recorded: str) -> bool:
    """Whether the recorded message is the escaped exception's (None: its text is not known
    without running the program's code): the core cuts long messages, ending them in `…`."""
    if escaped is None or escaped == recorded:
        return True
    return recorded.endswith("…") and escaped.startswith(recorded[:-1])


_PLAIN_ARGS = (str, int, float, bool, type(None))


def _own_text(exc: BaseException) -> Optional[str]:
    """``str(exc)`` when that runs none of the program's code (BaseException's own ``__str__``
    over builtin args), else None: the summary runs after the program, whose ``__str__`` may
    count its calls, take locks or print."""
    try:
        args = BaseException.args.__get__(exc)  # the C storage, not a property of the class
        if type(exc).__str__ is not BaseException.__str__ or any(type(a) not in _PLAIN_ARGS for a in args):
            return None
        return BaseException.__str__(exc)
    except Exception:  # noqa: BLE001 - never fail the summary
        return None


def _engine_id(obj: Any) -> Optional[int]:
    """The recording's identity of a live object (None if it was never recorded)."""
    from squall import _engine

    return _engine.object_id(obj)


def _skipped_modules() -> list[str]:
    try:
        from squall import config
    except Exception:
        return []
    got = _try(config.skipped_user_modules, []) or []
    result = []
    for m in got:
        if isinstance(m, dict):
            name = m.get("module") or m.get("name") or "?"
            why = m.get("reason") or m.get("why")
            result.append(f"{name}  ({why})" if why else str(name))
        elif isinstance(m, (tuple, list)) and len(m) == 2:
            result.append(f"{m[0]}  ({m[1]})")
        else:
            result.append(str(m))
    return result


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover
