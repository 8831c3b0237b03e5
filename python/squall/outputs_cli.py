"""`squall query REC outputs`: what the program wrote to stdout and stderr, each chunk with the
thread and entry idx that wrote it (:mod:`squall.outputs`)."""

from __future__ import annotations

from typing import Any, Dict, List

TEXT_SHOWN = 200


def add_parser(new: Any) -> None:
    """Adds the ``outputs`` subcommand (``new`` is query_cli's subcommand maker)."""
    p = new(
        "outputs",
        "what the program wrote to stdout/stderr, in order, each chunk with the thread and the "
        "idx of its last entry then (all threads unless --thread)",
    )
    p.add_argument("--stream", choices=("stdout", "stderr"), default=None, help="one stream only")
    p.add_argument("--contains", default=None, metavar="TEXT", help="only chunks whose text contains TEXT")
    p.add_argument("--limit", type=int, default=50, help="at most N chunks (default 50)")
    p.add_argument("--offset", type=int, default=0, help="skip the first N chunks")


def answer(rec: Any, opts: Any) -> Dict[str, Any]:
    from squall.agent import AgentError
    from squall.outputs import query

    if opts.limit < 1 or opts.offset < 0:
        raise AgentError(f"--limit must be at least 1 and --offset at least 0 (got {opts.limit} and {opts.offset})")
    out = query(rec._b, stream=opts.stream, flow_id=opts.flow, contains=opts.contains)
    chunks = out["chunks"]
    if opts.thread is not None:
        wanted = str(opts.thread)
        chunks = [c for c in chunks if str(c["thread_id"]) == wanted or c["thread_name"] == wanted]
        if not chunks and not any(
            str(c["thread_id"]) == wanted or c["thread_name"] == wanted for c in query(rec._b)["chunks"]
        ):
            raise AgentError(
                f"no output was written by thread {wanted!r}: pass a thread id or name from "
                "`squall query REC outputs` without --thread"
            )
    shown = chunks[opts.offset : opts.offset + opts.limit]
    return {
        "total": len(chunks),
        "shown": len(shown),
        "offset": opts.offset,
        "not_kept": out["not_kept"],
        "chunks": shown,
    }


def render(d: dict) -> List[str]:
    left = d["total"] - d["offset"] - d["shown"]
    more = f"; {left} more (--offset/--limit)" if left > 0 else ""
    out = [f"{d['total']} output chunk(s); showing {d['shown']}{more}"]
    for c in d["chunks"]:
        at = f"idx {c['idx']}" if c["idx"] is not None else "before its first entry"
        who = f"{c['thread_name']}({c['thread_id']})" if c["thread_name"] is not None else f"thread {c['thread_id']}"
        text = c["text"] if len(c["text"]) <= TEXT_SHOWN else c["text"][:TEXT_SHOWN]
        cut = f" ... ({c['chars']} characters written)" if c["cut"] or len(c["text"]) > TEXT_SHOWN else ""
        out.append(f"#{c['n']} {c['stream']} {at} {who}  {text!r}{cut}")
    nk = d["not_kept"]
    if nk["chunks"]:
        out.append(f"{nk['chunks']} chunk(s) ({nk['chars']} characters) written after the first 16 MiB were not kept")
    return out
