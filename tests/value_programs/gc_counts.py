"""Collections happen when the program's own allocations say so: writes recorded through write
slots (tuple targets, `o.n += f()`) allocate nothing the collector counts.

The program keeps gen 0 exactly at its threshold, then writes through tuple targets and an
augmented write with a call: every allocation the collector counts would start a collection,
which the callback below would see."""

import gc

COLLECTIONS = []


class Box:
    pass


def bump():
    return 1


def writes(box, n):
    i = 0
    while i < n:
        box.a, box.b = i, -i
        box.n += bump()
        i += 1
    return box.n


def main():
    box = Box()
    box.n = 0
    gc.collect()
    gc.callbacks.append(lambda phase, info: COLLECTIONS.append(phase))
    gc.set_threshold(5)
    kept = []
    while gc.get_count()[0] < 5:
        kept.append([])
    total = writes(box, 200)
    gc.set_threshold(700)
    print(total, "collections:", len(COLLECTIONS), "count", gc.get_count()[0])


if __name__ == "__main__":
    main()
