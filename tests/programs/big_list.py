"""A 5,000-item list passed as an argument: its snapshot is cut (with a marker) by the budget."""


def checksum(items):
    return sum(items) % 1000


big = list(range(5000))
print(checksum(big))
