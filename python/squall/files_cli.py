"""`squall info` and `squall export`: recording files from the command line. stdout carries data
only; messages and progress go to stderr."""

from __future__ import annotations

import datetime
import json
import os
import sys
from typing import Any, Optional

PROG = "squall"


def load(path: str, prog: str = PROG, report_cut: bool = True, progress: Optional[bool] = None):
    """The recording at ``path``, or None after printing why it cannot be read to stderr. A file
    cut short is said once on stderr (``report_cut``) as ``prog: ...``, not as a Python warning."""
    import warnings

    import squall
    from squall.indexes import SquallWarning

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SquallWarning)
            rec = squall.load(path, progress=progress)
    except (OSError, ValueError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None
    cut = rec._cut_message()
    if cut and report_cut:
        print(f"{prog}: {cut}", file=sys.stderr)
    return rec


def _when(ms: Optional[int]) -> str:
    if ms is None:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="seconds")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_info(opts: Any) -> int:
    rec = load(opts.recording, report_cut=False)  # the status line says it
    if rec is None:
        return 1
    info = rec.info()
    if opts.json:
        info["path"] = str(info["path"])
        print(json.dumps(info, indent=2, sort_keys=True))
        return 0
    out = [
        f"recording  {info['path']}  ({_size(info['file_bytes'])})",
        f"program    {info['program']}",
        f"argv       {' '.join(info['argv'])}",
        f"python     {info['python'].split()[0]}   squall {info['squall']}",
        f"cwd        {info['cwd']}",
        f"started    {_when(info['started_unix_ms'])}",
        f"ended      {_when(info['ended_unix_ms'])}",
    ]
    if info["completed"]:
        stats = info["stats"]
        how = "completed"
        if stats.get("interrupted"):
            how += " (the program was interrupted: Ctrl-C)"
        elif "exit_code" in stats:
            how += f" (exit code {stats['exit_code']})"
        out.append(f"status     {how}")
    else:
        out.append(f"status     CUT SHORT: {info['cut_short']}; everything up to the last flush is here")
    out.append(f"entries    {info['entries']}   functions {info['forms']}")
    depth = info["stats"].get("object_depth") if info["completed"] else None
    if depth is not None:
        out.append(f"objects    read afresh to depth {depth} (--object-depth; deeper ones show an earlier state)")
    for fid, threads in info["threads"].items():
        out.append(f"flow {fid}: {len(threads)} thread(s)")
        for t in threads:
            out.append(
                f"  thread {t['thread_id']:<10} {t['thread_name']:<24} {t['entries']:>10} entries {t['calls']:>9} calls"
            )
    print("\n".join(out))
    return 0


def cmd_export(opts: Any) -> int:
    rec = load(opts.recording)
    if rec is None:
        return 1
    ext = ".json" if opts.format == "chrome" else ".sqlite"
    out = os.path.abspath(opts.output or (os.path.splitext(opts.recording)[0] + ext))
    if opts.format == "sqlite" and os.path.exists(out):
        os.remove(out)
    progress = _progress(f"exporting {opts.format}") if sys.stderr.isatty() else None
    try:
        if opts.format == "chrome":
            rec._file.export_chrome(out, progress)
        else:
            rec._file.export_sqlite(out, progress)
    except (OSError, ValueError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    finally:
        if progress is not None:
            sys.stderr.write("\n")
    print(out)
    return 0


def _progress(label: str):
    def show(done: int, total: int) -> None:
        pct = 100 * done // total if total else 100
        sys.stderr.write(f"\r{label}: {pct:3d}%")
        sys.stderr.flush()

    return show
