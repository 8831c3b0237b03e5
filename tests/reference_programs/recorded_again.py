"""A box that holds a reference to a leaf, recorded again unchanged after the leaf changed
(``tests/test_values_recorded_again.py``)."""


class Leaf:
    def __init__(self, n):
        self.n = n


class Box:
    def __init__(self, leaf):
        self.leaf = leaf
        self.size = 1


def show(x):
    return 0


def rename(leaf, n):
    leaf.n = n
    return leaf


def main():
    leaf = Leaf(1)
    box = Box(leaf)
    show(box)
    rename(leaf, 2)
    show(leaf)
    show(box)
    again = box
    again.size = 5
    done = True
    return done


main()
