"""An object changed after the entry shown (tests/dap): the variables show each state as it was
recorded there, under the object's one identity."""


class Basket:
    def __init__(self):
        self.items = list(range(150))  # longer than the recorder keeps of a container
        self.owner = "ann"


def fill(basket):
    count = len(basket.items)
    basket.items.append(-1)
    basket.owner = "bob"
    return count


b = Basket()
fill(b)
b.owner = "cy"
