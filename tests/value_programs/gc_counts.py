"""Collections happen when the program's own allocations say so: writes recorded through write
slots (tuple targets, `o.n += i % 2`) allocate nothing the collector counts.

`writes` holds gen 0 exactly at its threshold, then writes through tuple targets and an
augmented write whose operand is not a name or a constant, calling nothing (before 3.11 a call
makes a frame, which the collector counts): every allocation the collector counts would start a
collection, which the callback below would see."""

import gc

COLLECTIONS = []


class Box:
    pass


def writes(box, n, kept):
    gc.collect()
    gc.set_threshold(5)
    while gc.get_count()[0] < 5:
        kept.append([])
    i = 0
    while i < n:
        box.a, box.b = i, -i
        box.n += i % 2
        i += 1
    gc.set_threshold(700)
    return box.n


def main():
    box = Box()
    box.n = 0
    gc.callbacks.append(lambda phase, info: COLLECTIONS.append(phase) if phase == "start" else None)
    total = writes(box, 200, [])
    print(total, "collections:", len(COLLECTIONS) - 1)


if __name__ == "__main__":
    main()
