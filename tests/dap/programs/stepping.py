"""Lines to step through: a loop, a call on a line, values that change (tests/dap)."""


def area(w, h):
    result = w * h
    return result


def total_area(shapes):
    total = 0
    for w, h in shapes:
        a = area(w, h)
        total += a
    return total


inventory = {"boxes": [(1, 2), (3, 4)], "name": "shop", "big": list(range(250))}
grand = total_area(inventory["boxes"])
print(grand)


class Box:
    def __init__(self, w, h):
        self.w = w
        self.h = h


def describe(box):
    label = f"{box.w}x{box.h}"
    return label


describe(Box(5, 6))


def log_line(msg):
    return len(msg)


def noted(msgs):
    count = len(msgs)
    # log_line(msgs) is called below: the caller's line is the call's, not this comment's
    log_line(msgs)
    return count


noted(["a"])
