"""Planted bug: a mutation in place. `discounted` should return new lines at a discount but
changes the catalog's shared Item objects, so every later order is billed at the discounted
price: the second order's total is 18.0 where 20.0 is right."""


class Item:
    def __init__(self, sku, price):
        self.sku = sku
        self.price = price


CATALOG = {"pen": Item("pen", 2.0), "pad": Item("pad", 4.0)}


def discounted(items, rate):
    out = []
    for item in items:
        item.price = item.price * (1 - rate)  # BUG: changes the shared catalog item
        out.append(item)
    return out


def order_total(skus):
    total = 0.0
    for sku in skus:
        item = CATALOG[sku]
        total = total + item.price
    return total


def main():
    promo = discounted([CATALOG["pen"]], 0.5)
    print("promo", [i.price for i in promo])
    first = order_total(["pad", "pad"])
    second = order_total(["pen", "pen", "pad", "pad", "pad", "pad"])
    print("totals", first, second)


main()
