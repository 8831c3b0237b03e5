"""Planted bug: a thread race on a shared dict. Two workers count visits with a read, then a
write (`hits[page] = seen + 1`); the events force the interleaving a preemption can cause:
both read 0, both write 1, and one visit is lost: hits['home'] ends at 1, not 2."""

import threading

hits = {"home": 0}
read_done = threading.Event()
first_wrote = threading.Event()


def count_visit(page, first):
    seen = hits[page]
    if first:
        read_done.set()
        first_wrote.wait(5)
    else:
        read_done.wait(5)
    hits[page] = seen + 1  # BUG: not atomic with the read above
    if not first:
        first_wrote.set()


def worker(first):
    count_visit("home", first)


def main():
    a = threading.Thread(target=worker, args=(True,), name="worker-a")
    b = threading.Thread(target=worker, args=(False,), name="worker-b")
    a.start()
    b.start()
    a.join()
    b.join()
    print("hits", hits)


main()
