"""Lambdas, including one that raises inside sorted(key=...), caught by the caller."""


def by_inverse(values):
    try:
        return sorted(values, key=lambda v: 1 / v)
    except ZeroDivisionError as e:
        return f"cannot sort: {e}"


double = lambda x: x * 2  # noqa: E731
words = sorted(["pear", "fig", "apple"], key=lambda w: len(w))
print(double(21), words)
print(by_inverse([4, 2]))
print(by_inverse([3, 0, 1]))
