"""Identity in a recording: the same object recorded twice (changed in between) is one
identity; two equal but distinct objects are two; an object created at the address of one that
was freed is a new identity. ``observe(tag, v)`` records each.
"""


class Item:
    def __init__(self, name, price):
        self.name = name
        self.price = price


def observe(tag, v):
    return None


def same_object_twice():
    a = Item("same", 1.5)
    observe("a-first", a)
    a.price = 2.5
    observe("a-second", a)


def equal_but_distinct():
    b = Item("twin", 1.5)
    c = Item("twin", 1.5)
    observe("b", b)
    observe("c", c)


def address_reused():
    """Records x, frees it, and makes objects of the same class until one lands at x's old
    address (CPython's allocator reuses it at once). True if that happened."""
    for attempt in range(20):
        x = Item("first", 1.5)
        observe("x", x)
        address = id(x)
        del x
        y = Item("second", 1.5)
        if id(y) == address:
            observe("y", y)
            return True
    return False


def main():
    same_object_twice()
    equal_but_distinct()
    return {"address reused": address_reused()}


if __name__ == "__main__":
    print(main())
