"""Latency of `squall dap` requests on a recording of about a million entries.

    python bench/dap_steps.py [--entries N] [--repeat R] [--recording PATH]

Records a loop that calls a small function (six entries per iteration) with `squall run`, then
attaches `squall dap` to it over stdio and times each stepping request from sending it to the
`stopped` event (what an editor waits for), then the stackTrace + scopes + variables an editor
asks right after: from the middle of the recording, R times each. Prints median, p95 and max per
request; the target is every step under 50 ms, with the stack and locals shown after it too (a
continue whose condition must be evaluated at many hits is a search: reported, not held to it).
Exits 1 if a step misses it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

from squall.dap.protocol import Channel

TARGET_MS = 50.0

PROGRAM = """
def work(i):
    x = i * 2
    y = x + 1
    return y


def main(n):
    total = 0
    for i in range(n):
        total += work(i)
    return total


main({n})
"""


class Client:
    """A minimal DAP client over the adapter's stdio."""

    def __init__(self) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "squall", "dap"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.ch = Channel(self.p.stdout, self.p.stdin)  # type: ignore[arg-type]
        self.pending: List[Dict[str, Any]] = []

    def request(self, command: str, args: Optional[dict] = None, wait_event: Optional[str] = None) -> Dict[str, Any]:
        self.ch.send({"type": "request", "command": command, "arguments": args or {}})
        response = None
        while True:
            msg = self.ch.read()
            if msg is None:
                raise RuntimeError(f"the adapter ended during `{command}`")
            if msg["type"] == "response":
                if not msg["success"]:
                    raise RuntimeError(f"`{command}` failed: {msg.get('message')}")
                response = msg
                if wait_event is None:
                    return msg
            elif msg["type"] == "event" and msg["event"] == wait_event and response is not None:
                return response

    def close(self) -> None:
        try:
            self.request("disconnect")
        except RuntimeError:
            pass
        self.p.wait(timeout=30)


def record(entries: int, out: str) -> None:
    # The program stays beside the recording: breakpoints are set on its lines.
    prog = os.path.splitext(out)[0] + "_program.py"
    with open(prog, "w") as f:
        f.write(PROGRAM.format(n=entries // 6))
    subprocess.run([sys.executable, "-m", "squall", "run", "-q", "-o", out, prog], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--recording", default=None, help="reuse (or keep) the recording at this path")
    opts = ap.parse_args()
    path = opts.recording or os.path.join(tempfile.gettempdir(), f"squall-dap-bench-{opts.entries}.sqrec")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        record(opts.entries, path)
        print(f"recorded {path} in {time.perf_counter() - t0:.1f} s")

    c = Client()
    try:
        c.request("initialize", {"adapterID": "bench"})
        t0 = time.perf_counter()
        c.request("attach", {"recording": path, "stopOnEntry": True}, wait_event="initialized")
        c.request("configurationDone", wait_event="stopped")
        print(f"attach to the first stop: {1000 * (time.perf_counter() - t0):.0f} ms")
        (thread,) = c.request("threads")["body"]["threads"]
        tid = thread["id"]
        info = c.request("stackTrace", {"threadId": tid})
        del info
        total = _entries(path)
        print(f"{total:,} entries in the thread")
        middle = total // 2
        src = _program_path(c, tid)
        y_line = _line_of(src, "y = x + 1")
        timings: Dict[str, List[float]] = {}

        def timed(name: str, command: str, args: dict) -> None:
            t = time.perf_counter()
            c.request(command, dict(args, threadId=tid), wait_event="stopped")
            stop = time.perf_counter()
            frames = c.request("stackTrace", {"threadId": tid, "levels": 20})["body"]["stackFrames"]
            scopes = c.request("scopes", {"frameId": frames[0]["id"]})["body"]["scopes"]
            c.request("variables", {"variablesReference": scopes[0]["variablesReference"]})
            shown = time.perf_counter()
            timings.setdefault(name, []).append(1000 * (stop - t))
            timings.setdefault(name + " + stack/locals", []).append(1000 * (shown - t))

        steps = [
            ("next", "next", {}),
            ("stepIn", "stepIn", {}),
            ("stepOut", "stepOut", {}),
            ("stepBack", "stepBack", {}),
            ("stepInBack", "squall/stepInBack", {}),
            ("stepOutBack", "squall/stepOutBack", {}),
            ("next (entry)", "next", {"granularity": "instruction"}),
            ("gotoEntry", "squall/gotoEntry", {"idx": middle}),
        ]
        for name, command, args in steps:
            for i in range(opts.repeat):
                if command != "squall/gotoEntry" and i % 20 == 0:
                    c.request("squall/gotoEntry", {"threadId": tid, "idx": middle + i}, wait_event="stopped")
                timed(name, command, args)
        c.request("setBreakpoints", {"source": {"path": src}, "breakpoints": [{"line": y_line}]})
        c.request("squall/gotoEntry", {"threadId": tid, "idx": middle}, wait_event="stopped")
        for _ in range(opts.repeat):
            timed("continue (breakpoint)", "continue", {})
        for _ in range(opts.repeat):
            timed("reverseContinue (breakpoint)", "reverseContinue", {})
        c.request(
            "setBreakpoints",
            {"source": {"path": src}, "breakpoints": [{"line": y_line, "condition": "i % 1000 == 999"}]},
        )
        for _ in range(max(opts.repeat // 10, 3)):
            timed("continue (condition true 1 in 1000)", "continue", {})
        frames = c.request("stackTrace", {"threadId": tid})["body"]["stackFrames"]
        for _ in range(opts.repeat):
            t = time.perf_counter()
            c.request("evaluate", {"expression": "x * 2 + y", "frameId": frames[0]["id"], "context": "hover"})
            timings.setdefault("evaluate", []).append(1000 * (time.perf_counter() - t))
    finally:
        c.close()

    print(f"{'request':44} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
    missed = []
    for name, ms in timings.items():
        ms.sort()
        p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
        print(f"{name:44} {statistics.median(ms):10.2f} {p95:8.2f} {ms[-1]:8.2f}")
        if "condition" not in name and ms[-1] > TARGET_MS:
            missed.append(name)
    if missed:
        print(f"over {TARGET_MS:.0f} ms: {', '.join(missed)}")
        return 1
    print(f"every step under {TARGET_MS:.0f} ms")
    return 0


def _entries(path: str) -> int:
    import squall

    rec = squall.load(path)
    return sum(t["entries"] for fid in rec.all_flows() for t in rec.flow_threads_info(fid))


def _program_path(c: Client, tid: int) -> str:
    frames = c.request("stackTrace", {"threadId": tid})["body"]["stackFrames"]
    return frames[0]["source"]["path"]


def _line_of(path: str, text: str) -> int:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise ValueError(f"no {text!r} in {path}")


if __name__ == "__main__":
    sys.exit(main())
