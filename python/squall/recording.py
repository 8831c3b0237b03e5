"""Recordings that outlive the process: ``squall.load(path)`` and the live recording, both with
the same queries.

    rec = squall.load("run.sqrec")
    rec.all_flows()                                   # {0: [thread_id, ...]}
    tl = rec.get_referenced_maps_timeline(0, tid)
    rec.deref_val_id(tl[0]["fn_args_ref"])            # structural snapshots of the values
    rec.info()                                        # program, argv, Python, start/end, completed...

Values read from a file deref to faithful snapshots: builtins (numbers, strings, bytes, lists,
tuples, dicts, sets) as themselves, other objects as :class:`squall.values.ObjectSnapshot` (type
name, repr, attributes), within the recording's depth/length budget (what was cut is a
:class:`squall.values.Truncated` marker).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Dict, Optional, Union

from squall import _engine
from squall.indexes import Queries, SquallWarning

__all__ = ["Recording", "live", "load"]


class Recording(Queries):
    """A recording file, loaded: every query of ``squall.indexes`` as a method, plus
    ``deref_val_id``, ``val_pprint`` and :meth:`info`."""

    def __init__(self, file: Any) -> None:
        super().__init__(file)
        self._file = file

    @property
    def path(self) -> str:
        return str(self._file.path)

    def info(self) -> Dict[str, Any]:
        """What the file holds: ``program``, ``argv``, ``python``, ``squall``, ``cwd``,
        ``started_unix_ms``, ``ended_unix_ms``, ``completed``, ``cut_short`` (why it ends early),
        ``file_bytes``, ``entries``, ``forms``, ``stats`` and per-flow ``threads``."""
        info = dict(self._file.info())
        info["threads"] = {fid: self.flow_threads_info(fid) for fid in sorted(self._file.all_flows())}
        return info

    def _warn_if_nothing_recorded(self) -> None:
        # A file has no recording to start. A cut file was reported once by `load`.
        if not self._file.all_flows() and not self._file.info().get("cut_short"):
            warnings.warn(f"the recording `{self.path}` holds no entries", SquallWarning, stacklevel=4)

    def _cut_message(self) -> Optional[str]:
        """None for a file that ends with its end marker; otherwise where and why it was cut, and
        what loaded."""
        info = self._file.info()
        cut = info.get("cut_short")
        if not cut:
            return None
        flows = self._file.all_flows()
        threads = sum(len(t) for t in flows.values())
        return (
            f"the recording `{self.path}` is cut short ({info['file_bytes']} bytes): {cut}. "
            f"Loaded what comes before: {info['entries']} entries in {threads} thread(s) of {len(flows)} flow(s), "
            f"{info['forms']} function(s); values it did not save show as <not saved>"
        )

    def __repr__(self) -> str:
        return f"<squall recording {self.path!r}>"


def load(path: Union[str, os.PathLike[str]], progress: Optional[bool] = None) -> Recording:
    """Opens a recording file written by ``squall run`` (or ``squall.api.save_to``).

    A file cut short (the program was killed, crashed or interrupted) opens with everything up
    to its last flush, with one :class:`squall.indexes.SquallWarning` saying where it was cut and
    what loaded; ``info()["cut_short"]`` says why it ends early. A file that is not a squall
    recording (a directory, a FIFO, a device included), is from a newer squall, or whose header
    is damaged raises ``ValueError`` saying what is wrong and what to do; a missing file raises
    ``FileNotFoundError``; a symbolic link loop or an unreadable file ``OSError``.
    """
    path = os.fspath(path)
    try:
        big = os.path.getsize(path) > (64 << 20)
    except OSError:  # the engine says what is wrong with the path
        big = False
    show = progress if progress is not None else big and _stderr_is_terminal()
    callback = _progress_printer("reading " + os.path.basename(path)) if show else None
    try:
        rec = Recording(_engine.load_recording(path, callback))
    finally:
        if callback is not None:
            sys.stderr.write("\n")
    cut = rec._cut_message()
    if cut:
        warnings.warn(cut, SquallWarning, stacklevel=2)
    return rec


def live() -> Queries:
    """The live recording of this process, as the same query object ``load`` returns."""
    from squall import indexes

    return indexes._live


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _progress_printer(label: str):
    def show(done: int, total: int) -> None:
        pct = 100 * done // total if total else 100
        sys.stderr.write(f"\r{label}: {pct:3d}%")
        sys.stderr.flush()

    return show
