"""Locals bound once, then mutated and recorded again (passed to a function): tests/test_history.py."""


class Cart:
    def __init__(self):
        self.total = 0


def show(x):
    return x


def main():
    basket = [1, 2]
    show(basket)
    basket.append(3)
    show(basket)
    prices = {"pen": 1}
    prices["ink"] = 2
    show(prices)
    cart = Cart()
    cart.total = 9
    show(cart)
    done = True
    return done


if __name__ == "__main__":
    main()
