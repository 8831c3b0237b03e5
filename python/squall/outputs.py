"""What the program wrote to stdout and stderr, captured into the recording.

``squall run`` calls :func:`capture` once recording starts: the process's text streams
(``sys.stdout`` and ``sys.stderr`` as they are then) get an instance attribute ``write``, a
builtin function of the engine (no frame in tracebacks, no recursion level of its own) that calls the stream's own ``write`` and then notes the text with the
writing thread's last entry (``crates/squall_python/src/recorder/outputs.rs``). ``sys.stdout`` stays the
same object, of the same type, and writes what it wrote before, in the same order.

What is captured: text written through those two stream objects, by any code (``print``,
``print(file=sys.stderr)``, ``sys.stdout.write``, ``writelines``, ``sys.__stdout__``, warnings,
tracebacks, uninstrumented libraries), from any thread, while recording is on; and bytes written
to their buffers (``sys.stdout.buffer.write(b)``), decoded with the stream's encoding, bytes
that are not valid text as ``\\xNN`` escapes. The buffer's tee leaves out what the text layer
itself flushes into the buffer (noted as text when it was written): the text stream's ``write``
and ``flush`` tees mark the thread as inside it. Chunks are in the order of the write calls; a
block-buffered stream may put a binary write's bytes out before text written earlier (Python
does, with or without squall). What is not captured: writes to a stream the program put in their
place (``redirect_stdout``, a ``StringIO``: that text never reaches the process's stdout), or
to the file descriptors directly (``os.write``, ``sys.stdout.buffer.raw``, subprocesses, C
extensions). A chunk keeps 64 KiB of text and the recording 16 MiB in all
(``squall_trace::outputs``); what is past that is counted.
"""

from __future__ import annotations

import io
import sys
from typing import Any, Dict, List, Optional

from squall import _engine

__all__ = ["capture", "query"]

_STREAMS = ("stdout", "stderr")


def capture() -> List[str]:
    """Tees ``sys.stdout`` and ``sys.stderr`` into the recording; returns the names of the
    streams it tees. A stream that is missing, already teed, or takes no instance attribute
    (``__slots__``) is left as it is. Its ``flush`` is teed with its ``write`` (or neither),
    and its ``buffer``'s ``write`` when it has a buffer that takes one."""
    teed = []
    for name in _STREAMS:
        stream = getattr(sys, name, None)
        if stream is None:
            continue
        try:
            write, flush = stream.write, stream.flush
            if _engine.tee_wrapped(write) is not None:
                continue
            text_tees = (_engine.output_tee(write, name), _engine.output_tee(flush, name, "flush"))
            stream.write = text_tees[0]
        except Exception:  # no __dict__, a read-only attribute: output is not captured there
            continue
        try:
            stream.flush = text_tees[1]
        except Exception:  # without the flush mark, binary writes are not teed (see the module doc)
            teed.append(name)
            continue
        _tee_buffer(stream, name)
        teed.append(name)
    return teed


def _tee_buffer(stream: Any, name: str) -> None:
    """Tees the ``write`` of the text stream's binary buffer (``sys.stdout.buffer``), if any."""
    try:
        if not isinstance(stream, io.TextIOWrapper):  # its `buffer` might be program code
            return
        buffer = stream.buffer
        if _engine.tee_wrapped(buffer.write) is not None:
            return
        buffer.write = _engine.output_tee(buffer.write, name, "binary", getattr(stream, "encoding", None))
    except Exception:  # no buffer, or one that takes no instance attribute: not captured
        pass


def release() -> None:
    """Takes the tees off ``sys.stdout`` and ``sys.stderr`` and their buffers (the instance
    attributes go away)."""
    for name in _STREAMS:
        stream = getattr(sys, name, None)
        # only a TextIOWrapper's buffer was teed (another stream's `buffer` might be program code)
        try:
            buffer = stream.buffer if isinstance(stream, io.TextIOWrapper) else None
        except Exception:  # never raise into the program at exit
            buffer = None
        for obj, attr in ((stream, "write"), (stream, "flush"), (buffer, "write")):
            try:
                if _engine.tee_wrapped(vars(obj).get(attr)) is not None:
                    delattr(obj, attr)
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
