"""A retry bug: ``charge`` applies a surcharge to the item it is given, in place
(``item.price = item.price * 2``), and ``checkout`` retries it after a declined payment, so the
item is charged twice over. Debugging it means seeing each call's argument as it was then: the
first ``charge`` got price 10, the retry got 20 (and the item ends at 40); ``make_item`` returned
an item of price 10.
"""


class Declined(Exception):
    pass


class Item:
    def __init__(self, sku, price):
        self.sku = sku
        self.price = price


ATTEMPTS = []


def make_item(sku, price):
    item = Item(sku, price)
    return item


def charge(item):
    item.price = item.price * 2  # the bug: the surcharge changes the item itself
    ATTEMPTS.append(item.price)
    if len(ATTEMPTS) == 1:
        raise Declined("card declined, try again")
    return item.price


def checkout(item):
    for attempt in range(3):
        try:
            return charge(item)
        except Declined:
            continue
    return None


def main():
    item = make_item("book", 10)
    total = checkout(item)
    return f"charged {total}, item price now {item.price}, attempts {ATTEMPTS}"


if __name__ == "__main__":
    print(main())
