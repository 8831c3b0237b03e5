"""Workloads measured by bench/run.py, recorded and unrecorded. Plain Python, no imports."""


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def tally(words):
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    return counts


def merge(into, more):
    for k, v in more.items():
        into[k] = into.get(k, 0) + v
    return into


def loop_dict(n):
    words = ["w%d" % (i % 97) for i in range(n)]
    total = {}
    for start in range(0, n, 1000):
        merge(total, tally(words[start : start + 1000]))
    squares = 0
    for i in range(n):
        if i % 3:
            squares += i * i
    return len(total), squares


class Point:
    def __init__(self):
        self.x = 0


def write_loop(n):
    # write-heavy: an attribute store, an item store and an augmented attribute store per step
    p = Point()
    slots = {}
    for i in range(n):
        p.x = i
        slots[i & 63] = i
        p.x += 1
    return p.x, len(slots)
