"""A reference's earlier state with the writes made to it since (instrumented code)."""


class Node:
    def __init__(self, name):
        self.name = name
        self.peer = None


def show(node):
    return node.name


def main():
    a = Node("a")
    b = Node("b")
    a.peer = b
    show(a)          # b known (recorded by the write above): its earlier state, name 'b'
    b.name = "B"     # a write to b, recorded
    a.seen = 1       # a changes too, so show(a) below stores a new state of a
    show(a)          # b's earlier state with the write applied: name 'B', still marked earlier
    del b.name
    a.seen = 2
    show(a)          # the delete applied
    b.name = "C"     # only b changes: a's state is the same as at the last show
    show(a)          # a's unchanged state must still resolve b as of now: 'C'


main()
