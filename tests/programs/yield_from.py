"""`yield from` delegating to a sub-generator whose return value is used."""


def inner(n):
    for i in range(n):
        yield i
    return n * 10


def outer():
    got = yield from inner(2)
    yield got


print(list(outer()))
