"""A module's namespace is the same under squall (found by toolz's test_curried, which compares
a module's namespace with another's): the rewriter must not add its own names to it."""
import json


def visible_names(ns):
    return sorted(k for k in ns if not k.startswith("__"))


def main():
    names = visible_names(globals())
    print(json.dumps(names))
    print(len(vars(json)) > 0, all(not k.startswith("_sq") for k in dir()))
    return names


main()
