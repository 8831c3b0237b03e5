"""``squall dap``: a Debug Adapter Protocol server over recordings, on stdio.

An editor (VS Code with editors/vscode, Neovim with nvim-dap, any DAP client) starts
``squall dap`` and either *launches* a program (``{"program": "script.py", "args": [...]}`` or
``{"module": "pkg.mod"}``: it is recorded by ``squall run`` first) or *attaches* to a recording
(``{"recording": "run.sqrec"}``). Then it steps forward and backward through what was recorded:
no live process is involved, values are shown as they were.

One module per family of requests: ``lifecycle`` (initialize, launch, attach, threads...),
``navigation`` (stepping both ways, custom ``squall/gotoEntry``, ``squall/stepInBack``,
``squall/stepOutBack``), ``breakpoints`` (breakpoints, continue, reverseContinue), ``inspect``
(stackTrace, scopes, variables, evaluate, exceptionInfo) and ``goto`` (gotoTargets, goto);
``protocol`` frames the messages, ``session`` holds the state.
"""

from __future__ import annotations

import sys
from typing import IO, Optional

from squall.dap import breakpoints, goto, inspect, lifecycle, navigation  # noqa: F401 - they register handlers
from squall.dap.protocol import Channel
from squall.dap.session import Session

__all__ = ["main", "serve"]


def serve(reader: IO[bytes], writer: IO[bytes]) -> int:
    return Session(Channel(reader, writer)).run()


def main(reader: Optional[IO[bytes]] = None, writer: Optional[IO[bytes]] = None) -> int:
    """Serves one session on stdin/stdout (the program's own output never goes there: a
    launched program runs in a child process whose output is sent as output events)."""
    stdin = reader or sys.stdin.buffer
    stdout = writer or sys.stdout.buffer
    # Anything printed by mistake must not corrupt the protocol stream.
    sys.stdout = sys.stderr
    return serve(stdin, stdout)
