"""An exception nobody catches: traceback on stderr, exit code 1."""


def lookup(table, key):
    return table[key]


def report(table):
    print("a =", lookup(table, "a"))
    print("b =", lookup(table, "b"))


report({"a": 1})
print("never printed")
