"""attrs' ``@attr.s(slots=True)`` replaces the class it decorates with a new one; its test suite
checks that the original is gone from ``__subclasses__()`` after ``gc.collect()``. Recording
holds what keeps that original alive here: its ``__mro__`` tuple and its ``__dict__``
descriptor (neither can be weakly referenced), a copy of its namespace, and a builder with
``__slots__`` in a cycle through a bound method, as attrs' ``_ClassBuilder`` is."""
import gc


class Base:
    pass


class Builder:
    __slots__ = ("cls", "namespace", "finish")

    def __init__(self, cls):
        self.cls = cls
        # Holds the `__dict__` descriptor, which points back at the class.
        # (Without the keys 3.13 adds to every class body: the snapshot is the same on all.)
        self.namespace = {k: v for k, v in cls.__dict__.items() if k not in ("__firstlineno__", "__static_attributes__")}
        self.finish = self.build

    def build(self):
        mro = self.cls.__mro__
        names = [c.__name__ for c in mro]
        body = {k: v for k, v in self.namespace.items() if k not in ("__dict__", "__weakref__")}
        body["__slots__"] = ()
        return type(self.cls.__name__, self.cls.__bases__, body), names


def slotted(cls):
    new, names = Builder(cls).finish()
    print("built", new.__name__, "from", names)
    return new


@slotted
class Point(Base):
    def norm(self):
        return 0


gc.collect()
print("subclasses:", [(c.__name__, "__slots__" in c.__dict__) for c in Base.__subclasses__()])
