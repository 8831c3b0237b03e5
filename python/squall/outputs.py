"""What the program wrote to stdout and stderr, captured into the recording.

``squall run`` calls :func:`capture` once recording starts: the process's text streams
(``sys.stdout`` and ``sys.stderr`` as they are then) get an instance attribute ``write``, a
builtin function of the engine (no frame in tracebacks, no recursion level of its own) that calls the stream's own ``write`` and then notes the text with the
writing thread's last entry (``crates/squall_python/src/recorder/outputs.rs``). ``sys.stdout`` stays the
same object, of the same type, and writes what it wrote before, in the same order.

What is captured: text written through those two stream objects, by any code (``print``,
``print(file=sys.stderr)``, ``sys.stdout.write``, ``writelines``, ``sys.__stdout__``, warnings,
tracebacks, uninstrumented libraries), from any thread, while recording is on. What is not:
writes to a stream the program put in their place (``redirect_stdout``, a ``StringIO``: that
text never reaches the process's stdout), bytes written to ``sys.stdout.buffer`` or to the file
descriptors directly (``os.write``, subprocesses, C extensions). A chunk keeps 64 KiB of text
and the recording 16 MiB in all (``squall_trace::outputs``); what is past that is counted.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

from squall import _engine

__all__ = ["capture", "query"]

_STREAMS = ("stdout", "stderr")


def capture() -> List[str]:
    """Tees ``sys.stdout`` and ``sys.stderr`` into the recording; returns the names of the
    streams it tees. A stream that is missing, already teed, or takes no instance attribute
    (``__slots__``) is left as it is."""
    teed = []
    for name in _STREAMS:
        stream = getattr(sys, name, None)
        if stream is None:
            continue
        try:
            write = stream.write
            if _engine.tee_wrapped(write) is not None:
                continue
            stream.write = _engine.output_tee(write, name)
        except Exception:  # no __dict__, a read-only attribute: output is not captured there
            continue
        teed.append(name)
    return teed


def release() -> None:
    """Takes the tees off ``sys.stdout`` and ``sys.stderr`` (the instance attribute goes away)."""
    for name in _STREAMS:
        stream = getattr(sys, name, None)
        try:
            if _engine.tee_wrapped(vars(stream).get("write")) is not None:
                del stream.write
        except Exception:
            pass


def query(
    backend: Any,
    stream: Optional[str] = None,
    flow_id: Optional[int] = None,
    thread_id: Optional[int] = None,
    contains: Optional[str] = None,
) -> Dict[str, Any]:
    """The outputs of a recording (`_engine.live()` or a loaded file),
    filtered. ``{"chunks": [...], "not_kept": {"chunks": n, "chars": n}}``; each chunk has its
    position ``n`` among all chunks, ``stream``, ``flow_id``, ``thread_id``, ``thread_name``,
    ``idx`` (the writing thread's last entry then; None before its first), ``text``, ``chars``
    (the length written) and ``cut`` (text holds less than was written)."""
    if stream is not None and stream not in _STREAMS:
        raise ValueError(f"unknown stream {stream!r}: use 'stdout' or 'stderr'")
    chunks, (nk_chunks, nk_chars) = backend.outputs()
    out = []
    for n, c in enumerate(chunks):
        if stream is not None and c["stream"] != stream:
            continue
        if flow_id is not None and c["flow_id"] != flow_id:
            continue
        if thread_id is not None and c["thread_id"] != thread_id:
            continue
        if contains is not None and contains not in c["text"]:
            continue
        c["n"] = n
        out.append(c)
    return {"chunks": out, "not_kept": {"chunks": nk_chunks, "chars": nk_chars}}
