"""``squall open REC``: the web UI over a recording file.

Starts the UI server (Rust, inside ``squall._engine``) on 127.0.0.1, prints the URL (it carries a
random access token: anyone without it gets 401), opens the default browser unless
``--no-browser``, and serves until Ctrl-C.

Also what every UI launcher shares: the user's own token (``--token`` or ``$SQUALL_UI_TOKEN``),
the warning for a bind other machines can reach, and how a live UI's URL is handed over (its
token lets anyone run code in the program: written to a 0600 file, printed only to a terminal).
See docs/security.md.
"""

from __future__ import annotations

import atexit
import ipaddress
import os
import sys
import time
from typing import Optional

TOKEN_ENV = "SQUALL_UI_TOKEN"


def user_token(given: Optional[str] = None) -> Optional[str]:
    """The token the user chose (an option, else ``$SQUALL_UI_TOKEN``), or None for a random one."""
    return given or os.environ.get(TOKEN_ENV) or None


def is_loopback(host: str) -> bool:
    h = host.strip("[]")
    if h.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def warn_if_remote(host: str, port_url: str, live: bool, prog: str = "squall") -> None:
    """A bind other machines can reach is the user's explicit choice: say what it exposes."""
    if is_loopback(host):
        return
    grant = "run any code in this program" if live else "read this recording and the source files it names"
    print(
        f"{prog}: warning: the UI listens on {host} ({port_url}), reachable from other machines: anyone who can "
        f"reach it and has the token can {grant}. Traffic is plain HTTP. See docs/security.md.",
        file=sys.stderr,
        flush=True,
    )


def base_of(url: str) -> str:
    """The URL without its token (safe to print to logs)."""
    return url.split("?token=", 1)[0]


def url_file(url: str) -> str:
    """Writes ``url`` to a file only this user can read (``$SQUALL_UI_URL_DIR`` or ~/.squall,
    ``ui-<pid>.url``, mode 0600, removed when the process exits); returns its path."""
    d = os.environ.get("SQUALL_UI_URL_DIR") or os.path.join(os.path.expanduser("~"), ".squall")
    os.makedirs(d, mode=0o700, exist_ok=True)
    path = os.path.join(d, "ui-%d.url" % os.getpid())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (url + "\n").encode())
    finally:
        os.close(fd)
    atexit.register(_remove_quietly, path)  # the token dies with the process: so does its file
    return path


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def announce_live(url: str, own_token: bool, label: str = "squall UI (live)") -> str:
    """The line to print for a live UI. Its token is a code-execution credential: shown in full
    only on a terminal; otherwise (stderr going to a log) the URL without it and the 0600 file
    holding the whole URL. A token the user chose is never printed."""
    if own_token:
        return f"{label}: {base_of(url)}?token=<your token>"
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        return f"{label}: {url}  (the token lets its holder run code in this program)"
    try:
        where = url_file(url)
    except OSError as e:
        return f"{label}: {base_of(url)} (the URL with its token could not be written to a file: {e})"
    return (
        f"{label}: {base_of(url)} (the URL with its access token is in {where}, readable only by you; "
        "the token lets its holder run code in this program)"
    )


def add_parser(sub) -> None:
    p = sub.add_parser(
        "open",
        help="browse a recording in the web UI",
        description="Serve the web UI over a recording file on 127.0.0.1 and print "
        "its URL (with an access token); serve until Ctrl-C.",
    )
    p.add_argument("recording", help="a .sqrec file written by `squall run`")
    p.add_argument("--no-browser", action="store_true", help="only print the URL")
    p.add_argument("--port", type=int, default=0, metavar="N", help="port to listen on (default: any free port)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to listen on (default 127.0.0.1). Anything else (0.0.0.0: every interface) "
        "lets other machines reach the UI: anyone with the token can then read the recording "
        "(a warning is printed; docs/security.md)",
    )
    p.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="use this access token instead of a random one (at least 16 URL-safe characters; "
        f"default: ${TOKEN_ENV} if set)",
    )


def _cut_short(url: str):
    """Why the served file ends early (None if it does not), from the server itself."""
    import json
    import urllib.request

    try:
        base, token = url.split("?token=", 1)
        with urllib.request.urlopen(f"{base.rstrip('/')}/api/flows?token={token}", timeout=30) as r:
            return json.loads(r.read())["info"].get("cut_short")
    except (OSError, ValueError, KeyError):
        return None


def cmd_open(opts) -> int:
    # Ctrl-C stops it at any point once the server runs, not only in the wait at the end.
    try:
        return _open(opts)
    except KeyboardInterrupt:
        return 0


def _open(opts) -> int:
    from squall import _engine

    if not os.path.lexists(opts.recording):
        print(f"squall open: no such file: {opts.recording}", file=sys.stderr)
        return 2
    token = user_token(opts.token)
    try:
        url = _engine.serve_file(opts.recording, opts.host, opts.port, token)
    except (OSError, ValueError) as e:
        print(f"squall open: {e}", file=sys.stderr)
        return 1
    warn_if_remote(opts.host, base_of(url), live=False, prog="squall open")
    # A recording file's UI: the token lets its holder read the recording (not run code), and
    # `squall open` is run by hand: the URL is printed whole (unless the user chose the token).
    print(f"squall UI: {base_of(url) + '?token=<your token>' if token else url}", flush=True)
    cut = _cut_short(url)
    if cut:
        print(
            f"squall open: the recording `{opts.recording}` is cut short: {cut}; the UI shows what comes before",
            file=sys.stderr,
            flush=True,
        )
    print("(Ctrl-C stops it)", file=sys.stderr, flush=True)
    if not opts.no_browser:
        try:
            import webbrowser

            webbrowser.open(url)
        except Exception:  # no browser: the URL is printed
            pass
    while True:
        time.sleep(3600)
