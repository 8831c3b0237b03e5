"""Jumping to when a line ran: gotoTargets offers the runs of a line nearest the thread's entry
(the next and the previous one) and its first and last runs; goto moves there."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from squall.dap.navigation import Nav
from squall.dap.session import DapError, Session, request


@request("gotoTargets")
def goto_targets(s: Session, args: Dict[str, Any]) -> Dict[str, Any]:
    t = s.thread(args)
    path = (args.get("source") or {}).get("path")
    line = args.get("line")
    if not path or not isinstance(line, int):
        raise DapError("gotoTargets needs a source with a path and a line")
    nav = Nav(s, t)

    def find(from_idx: Optional[int], backward: bool) -> Optional[int]:
        if from_idx is not None and not 0 <= from_idx <= nav.last:
            return None
        e = s.rec.goto_line(path, line, t.flow_id, t.thread_id, from_idx, backward)
        return None if e is None else nav.run_start(e["idx"])

    cur_start = nav.run_start(t.idx)
    nxt = find(t.idx + 1, False)
    while nxt is not None and nxt <= cur_start:
        nxt = find(_after_run(nav, nxt), False)
    prev = find(cur_start - 1, True) if cur_start > 0 else None
    wanted = [
        ("next run", nxt),
        ("previous run", prev),
        ("first run", find(0, False)),
        ("last run", find(nav.last, True)),
    ]
    targets: List[Dict[str, Any]] = []
    seen = set()
    for label, idx in wanted:
        if idx is None or idx in seen:
            continue
        seen.add(idx)
        tid = len(s.goto_targets) + 1
        s.goto_targets[tid] = (t.dap_id, idx)
        targets.append({"id": tid, "label": f"{label} of line {line} (entry {idx}, thread {t.name})", "line": line})
    if not targets:
        raise DapError(f"line {line} of {path} never ran in thread {t.name!r} of this recording")
    return {"targets": targets}


def _after_run(nav: Nav, start: int) -> Optional[int]:
    n = nav.next(start, False)
    return n if n > start else None


@request("goto")
def goto(s: Session, args: Dict[str, Any]) -> None:
    target = s.goto_targets.get(args.get("targetId"))
    if target is None:
        raise DapError(f"no goto target {args.get('targetId')!r}: ask gotoTargets again")
    t = s.threads[target[0]]
    t.idx = target[1]
    s.stopped(t, "goto", f"entry {t.idx}")
