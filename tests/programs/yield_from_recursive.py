"""A recursive tree walk with `yield from`: each level's resumes nest under its parent's, as the
stack was; send() and throw() pass through the delegation chain; gi_yieldfrom and a traceback
through it are Python's own."""
import traceback


def walk(node, depth=0):
    label, children = node
    got = yield (depth, label)
    if got is not None:
        label = got
    for child in children:
        yield from walk(child, depth + 1)
    return label


TREE = ("a", [("b", [("c", [])]), ("d", [])])

print(list(walk(TREE)))

g = walk(TREE)
print(next(g))
print(g.send(None))
print(g.gi_yieldfrom.gi_code.co_name, g.gi_yieldfrom.gi_yieldfrom is None)
print(g.send("B2"))
g.close()
print(g.gi_frame is None)


def failing(n):
    if n == 0:
        raise ValueError("bottom")
    yield n
    yield from failing(n - 1)


try:
    list(failing(2))
except ValueError:
    print(traceback.format_exc().count("yield from failing(n - 1)"))

h = walk(TREE)
next(h)
next(h)
try:
    h.throw(KeyError("thrown"))
except KeyError as e:
    print("throw came back:", e)
