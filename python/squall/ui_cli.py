"""``squall open REC``: the web UI over a recording file.

Starts the UI server (Rust, inside ``squall._engine``) on 127.0.0.1, prints the URL (it carries a
random access token: anyone without it gets 401), opens the default browser unless
``--no-browser``, and serves until Ctrl-C.
"""

from __future__ import annotations

import os
import sys
import time


def add_parser(sub) -> None:
    p = sub.add_parser("open", help="browse a recording in the web UI",
                       description="Serve the web UI over a recording file on 127.0.0.1 and print "
                                   "its URL (with an access token); serve until Ctrl-C.")
    p.add_argument("recording", help="a .sqrec file written by `squall run`")
    p.add_argument("--no-browser", action="store_true", help="only print the URL")
    p.add_argument("--port", type=int, default=0, metavar="N",
                   help="port to listen on (default: any free port)")
    p.add_argument("--host", default="127.0.0.1", help=argparse_suppress())


def _cut_short(url: str):
    """Why the served file ends early (None if it does not), from the server itself."""
    import json
    import urllib.request

    base, token = url.split("?token=", 1)
    try:
        with urllib.request.urlopen(f"{base.rstrip('/')}/api/flows?token={token}", timeout=30) as r:
            return json.loads(r.read())["info"].get("cut_short")
    except (OSError, ValueError, KeyError):
        return None


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


def cmd_open(opts) -> int:
    from squall import _engine

    if not os.path.lexists(opts.recording):
        print(f"squall open: no such file: {opts.recording}", file=sys.stderr)
        return 2
    try:
        url = _engine.serve_file(opts.recording, opts.host, opts.port)
    except (OSError, ValueError) as e:
        print(f"squall open: {e}", file=sys.stderr)
        return 1
    print(f"squall UI: {url}", flush=True)
    cut = _cut_short(url)
    if cut:
        print(f"squall open: the recording `{opts.recording}` is cut short: {cut}; the UI shows what comes before",
              file=sys.stderr, flush=True)
    print("(Ctrl-C stops it)", file=sys.stderr, flush=True)
    if not opts.no_browser:
        try:
            import webbrowser

            webbrowser.open(url)
        except Exception:  # no browser: the URL is printed
            pass
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
