"""A generator driven by next(), send(), throw() and close()."""


def accumulator(start):
    total = start
    try:
        while True:
            try:
                x = yield total
            except ValueError:
                x = -100
            total += x or 0
    finally:
        print("closed at", total)


def squares(n):
    for i in range(n):
        yield i * i


def drive():
    acc = accumulator(10)
    first = next(acc)
    after_send = acc.send(5)
    after_throw = acc.throw(ValueError("reset"))
    acc.close()
    return first, after_send, after_throw


print(drive(), list(squares(3)))
