"""Bookmarks placed from code: ``squall.bookmark("before the retry")``.

A bookmark is recorded as a call of the pseudo-function ``squall.bookmark`` with the note as its
argument, at that point of the current thread's timeline: it is saved with the recording, shows
in the call tree and the functions list of the UI, and ``bookmarks()`` lists them.
"""

from __future__ import annotations

from typing import Any, List, Optional

from squall import _engine

_ids: Optional[tuple[int, int]] = None


def _bookmark_ids() -> tuple[int, int]:
    global _ids
    if _ids is None:
        form = _engine.register_form("squall", "bookmark", "<squall>", 0, ["note"], _engine.FORM_FUNCTION)
        site = _engine.register_site(form, _engine.SITE_RETURN, 0, 0, 0, 0)
        _ids = (form, site)
    return _ids


def bookmark(note: str = "") -> None:
    """Marks this point of the current thread's recording with ``note``. Never raises into the
    program; does nothing when recording is off."""
    try:
        form, site = _bookmark_ids()
        _engine.call(form, str(note))
        _engine.ret(site, None)
    except Exception:  # noqa: BLE001 - a bookmark must never disturb the program
        pass


def bookmarks(queries: Any = None, flow_id: Optional[int] = None) -> List[dict]:
    """Every bookmark placed from code: ``flow_id``, ``thread_id``, ``idx``, ``note`` — from the
    live recording, or from ``queries`` (a ``squall.load(...)`` recording). The UI's bookmarks
    list is the same query (``squall_trace::bookmarks``)."""
    from squall import indexes

    q = queries if queries is not None else indexes._live
    out: List[dict] = []
    for b in q._b.bookmarks(flow_id):
        note = q.deref_val_id(b["note_ref"])
        out.append({"flow_id": b["flow_id"], "thread_id": b["thread_id"], "idx": b["idx"], "note": note})
    return out
