"""Classes that write a line to the file named by $SPY_LOG each time one of their special
methods, attribute hooks or properties runs, in any process that imports this module. Used by
spies.py: recording it, saving the recording and querying the file must log exactly what plain
``python spies.py`` logs."""

import os

_FD = os.open(os.environ["SPY_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def hit(name):
    os.write(_FD, (name + "\n").encode())


class Spy:
    def __init__(self, n):
        self.n = n

    def __getattribute__(self, name):
        hit("Spy.__getattribute__")
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        hit("Spy.__getattr__")
        raise AttributeError(name)

    def __repr__(self):
        hit("Spy.__repr__")
        return "Spy()"

    def __str__(self):
        hit("Spy.__str__")
        return "spy"

    def __len__(self):
        hit("Spy.__len__")
        return 1

    def __iter__(self):
        hit("Spy.__iter__")
        return iter(())

    def __eq__(self, other):
        hit("Spy.__eq__")
        return self is other

    def __hash__(self):
        hit("Spy.__hash__")
        return 1

    def __bool__(self):
        hit("Spy.__bool__")
        return True

    def __reduce_ex__(self, protocol):
        hit("Spy.__reduce_ex__")
        return object.__reduce_ex__(self, protocol)

    def __sizeof__(self):
        hit("Spy.__sizeof__")
        return object.__sizeof__(self)

    def __dir__(self):
        hit("Spy.__dir__")
        return object.__dir__(self)

    @property
    def prop(self):
        hit("Spy.prop")
        return 1


class SpySlots:
    __slots__ = ("n",)

    def __init__(self, n):
        object.__setattr__(self, "n", n)

    def __getattribute__(self, name):
        hit("SpySlots.__getattribute__")
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        hit("SpySlots.__getattr__")
        raise AttributeError(name)

    def __repr__(self):
        hit("SpySlots.__repr__")
        return "SpySlots()"

    @property
    def prop(self):
        hit("SpySlots.prop")
        return 1


class SpyList(list):
    def __getattribute__(self, name):
        hit("SpyList.__getattribute__")
        return list.__getattribute__(self, name)

    def __repr__(self):
        hit("SpyList.__repr__")
        return "SpyList()"

    def __len__(self):
        hit("SpyList.__len__")
        return list.__len__(self)

    def __iter__(self):
        hit("SpyList.__iter__")
        return list.__iter__(self)

    def __getitem__(self, i):
        hit("SpyList.__getitem__")
        return list.__getitem__(self, i)

    def __eq__(self, other):
        hit("SpyList.__eq__")
        return list.__eq__(self, other)

    def __hash__(self):
        hit("SpyList.__hash__")
        return 1


class SpyDict(dict):
    def __getattribute__(self, name):
        hit("SpyDict.__getattribute__")
        return dict.__getattribute__(self, name)

    def __repr__(self):
        hit("SpyDict.__repr__")
        return "SpyDict()"

    def __len__(self):
        hit("SpyDict.__len__")
        return dict.__len__(self)

    def __iter__(self):
        hit("SpyDict.__iter__")
        return dict.__iter__(self)

    def __getitem__(self, k):
        hit("SpyDict.__getitem__")
        return dict.__getitem__(self, k)

    def keys(self):
        hit("SpyDict.keys")
        return dict.keys(self)

    def items(self):
        hit("SpyDict.items")
        return dict.items(self)

    def values(self):
        hit("SpyDict.values")
        return dict.values(self)

    def __eq__(self, other):
        hit("SpyDict.__eq__")
        return dict.__eq__(self, other)

    def __hash__(self):
        hit("SpyDict.__hash__")
        return 1
