"""A function changes `item.price` in place and is called twice: the writes query names the
line, the value before and after each change."""


class Item:
    def __init__(self, name, price):
        self.name = name
        self.price = price


def apply_discount(item, pct):
    item.price = item.price * (100 - pct) // 100


def main():
    item = Item("lamp", 200)
    apply_discount(item, 10)
    apply_discount(item, 50)
    return item.price


if __name__ == "__main__":
    print(main())
