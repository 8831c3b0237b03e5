"""The other recordings an MCP agent names (`diff`'s `other`: a second recording of the same
program): each loaded once per server and kept, so a series of diffs against it reads it once.
A path that is not a readable squall recording is refused with the reason and what to send."""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict

from squall.agent import AgentError


class OtherRecordings:
    """Recordings by the path an agent sent, loaded on first use."""

    def __init__(self) -> None:
        self._loaded: Dict[str, Any] = {}

    def get(self, path: str) -> Any:
        import squall
        from squall.indexes import SquallWarning

        full = os.path.abspath(os.path.expanduser(path))
        rec = self._loaded.get(full)
        if rec is not None:
            return rec
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SquallWarning)  # a cut file still diffs up to its cut
                rec = squall.load(full)
        except (OSError, ValueError) as e:
            raise AgentError(
                f"other = {path!r} cannot be opened as a squall recording ({e}); send the path of a "
                f"file written by `squall run -o FILE` (a relative path is read from {os.getcwd()!r})"
            ) from None
        self._loaded[full] = rec
        return rec
