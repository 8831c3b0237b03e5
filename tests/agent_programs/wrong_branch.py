"""Planted bug: a wrong branch taken once. Parcels of 10 kg and more ship as freight, but the
comparison is `>` where `>=` is meant: the one parcel of exactly 10 kg is charged the parcel
rate."""

FREIGHT_FROM_KG = 10


def shipping_cost(weight):
    if weight > FREIGHT_FROM_KG:  # BUG: `>=` is meant
        cost = 50 + weight * 2
    else:
        cost = 5 + weight * 1
    return cost


def main():
    for w in [1, 3, 12, 10, 15]:
        print(w, shipping_cost(w))


main()
