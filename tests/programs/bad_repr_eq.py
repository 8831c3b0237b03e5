"""Objects whose __repr__ raises and whose __eq__ raises, passed as args and returned."""


class BadRepr:
    def __repr__(self):
        raise ValueError("no repr for you")


class BadEq:
    def __eq__(self, other):
        raise TypeError("no comparisons")

    __hash__ = object.__hash__

    def __repr__(self):
        return "BadEq()"


def identity(x):
    return x


def pair(a, b):
    return [a, b]


r = identity(BadRepr())
e = identity(BadEq())
both = pair(r, e)
print(type(r).__name__, type(e).__name__, len(both))
