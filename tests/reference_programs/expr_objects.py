"""An expression whose value is an object recorded before (encode.rs `encode_expr`)."""


class Box:
    def __init__(self, v):
        self.v = v


def use(box):
    return box


def main():
    box = Box(1)
    use(box)
    holder = [box]
    if holder[0] is not None:  # EXPR: the box, recorded as `use`'s argument before
        box.v = 2
    return box


main()
