"""Objects past the recording's object_depth: references shown with an earlier state."""


class Node:
    def __init__(self, name):
        self.name = name
        self.child = None
        self.peer = None


def show(node):
    return node.name


def main():
    root = Node("root")
    mid = Node("mid")
    leaf = Node("leaf")
    root.child = mid
    mid.child = leaf
    show(root)          # mid in full (level 1's field), leaf first seen: in full
    show(root)          # leaf now known: a reference, shown with its earlier state
    leaf.name = "LEAF"  # changed after both records
    show(root)          # still the earlier state, marked, never "LEAF" unless recorded
    show(leaf)          # recorded itself: "LEAF"
    show(root)          # the reference now finds the newer state
    a = Node("a")
    b = Node("b")
    a.peer = b
    b.peer = a
    show(a)             # a cycle is shown once


main()
