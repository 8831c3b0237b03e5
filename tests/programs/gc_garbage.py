"""Recording must not keep the program's garbage alive (found by attrs' test suite, which checks
that a class it replaced is gone from ``__subclasses__()`` after ``gc.collect()``): cycles the
program dropped are collected, finalizers run, weak references die, exactly as without squall."""
import gc
import weakref

finalized = []


class Base:
    pass


class Node:
    def __init__(self, name):
        self.name = name
        self.peer = None

    def __del__(self):
        finalized.append(self.name)


def make_cycle(name):
    a = Node(name)
    b = Node(name + "'")
    a.peer = b
    b.peer = a
    return a


def use(node):
    return node.name + "/" + node.peer.name


def cycles():
    n = make_cycle("x")
    print(use(n))
    r = weakref.ref(n)
    del n
    gc.collect()
    print("finalized:", sorted(finalized), "alive:", r() is not None)


def describe(cls, instance):
    namespace = cls.__dict__  # a mapping proxy: its descriptors point back at the class
    return sorted(k for k in namespace if not k.startswith("__")), type(instance).__name__


def replaced_class():
    class Orig(Base):
        def method(self):
            return __class__

    print(describe(Orig, Orig()))

    class Copy(Base):
        pass

    return Copy


def weak_cache():
    cache = weakref.WeakValueDictionary()

    def fill():
        o = Node("cached")
        o.peer = o
        cache["k"] = o
        return use(o)

    print(fill(), sorted(cache.keys()))
    gc.collect()
    print("cache after collect:", sorted(cache.keys()))


def survivors():
    kept = make_cycle("kept")
    use(kept)
    gc.collect()
    print("survivor intact:", use(kept))
    return kept


cycles()
keep = replaced_class()
gc.collect()
print("subclasses:", [c.__name__ for c in Base.__subclasses__()])
weak_cache()
s = survivors()
