"""``python reprs.py KIND``: records an object (as an argument, a return value, an expression
value) whose ``__repr__`` misbehaves: ``raise`` raises, ``exit`` raises SystemExit, ``sleep``
sleeps 1 s, ``lock`` needs a lock the program holds until it exits (it waits at most 1 s, then
says so on stderr; the program waits 0.6 s, a flush interval, before it exits), ``control`` is
harmless. The program's output and exit code must be the
same under ``squall run`` as under ``python``, and no slower for ``sleep`` than for ``control``.
Each ``__repr__`` call is also logged to $SPY_LOG (if set)."""

import os
import sys
import threading
import time

KIND = sys.argv[1]
LOCK = threading.Lock()
LOG = os.environ.get("SPY_LOG")


def log(text):
    if LOG:
        with open(LOG, "a") as f:
            f.write(text + "\n")


class Touchy:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        log(f"__repr__ {KIND}")
        if KIND == "raise":
            raise RuntimeError("this repr always fails")
        if KIND == "exit":
            raise SystemExit(3)
        if KIND == "sleep":
            time.sleep(1)
        if KIND == "lock":
            if not LOCK.acquire(timeout=1):
                print("__repr__ waited 1 s for the program's lock", file=sys.stderr, flush=True)
                return "Touchy(?)"
            LOCK.release()
        return f"Touchy({self.name})"


def take(v):
    return None


def give(v):
    return v


def main():
    LOCK.acquire()  # held until the program exits
    t = Touchy("a")
    take(t)
    kept = give(t)
    box = [kept]
    if box[0] is not None:
        pass
    others = [Touchy(str(i)) for i in range(3)]
    take(others)
    if KIND == "lock":
        time.sleep(0.6)  # time for a background flush while the program holds the lock
    print("done", KIND)


if __name__ == "__main__":
    main()
