"""Receivers (the x of x.a, x[k], x.m()): an object already recorded is a reference to its
earlier state, shown with the writes recorded since; a list is recorded as it is."""

from fractions import Fraction


class Cart:
    def __init__(self):
        self.items = []
        self.total = 0

    def add(self, price):
        self.items.append(price)  # self.items: a list receiver, recorded as it is
        self.total += price  # a recorded write


class Shop:
    def __init__(self, name):
        self.name = name
        self.cart = Cart()


def show(value):
    return value


def checkout(shop):
    cart = shop.cart  # shop: known (an argument), a reference
    return show(cart.total)


def tax(total):
    return Fraction(total, 10).limit_denominator(5)  # never recorded before: its state in full


def main():
    shop = Shop("corner")
    shop.cart.add(3)
    shop.cart.add(4)
    show(shop.cart.items)  # the list as it is, [3, 4]: a newer state of it than the cart's
    shop.cart.add(5)  # the cart's earlier state holds that newer state of its list
    return tax(checkout(shop))


main()
