"""Frames of every shape: a long loop calling out, nested calls, a generator resumed, an
exception unwinding two frames and caught, and a recursion: the parents and frames of entries
(the A column of ENTRIES) as the format writes and reads them."""


def leaf(x):
    return x * 2


def middle(x):
    y = leaf(x) + 1
    return leaf(y)


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def fails(depth):
    if depth == 0:
        raise ValueError("bottom")
    return fails(depth - 1)


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def main():
    total = 0
    for i in range(40):
        total += middle(i)
        if i % 10 == 0:
            total += sum(countdown(3))
    try:
        fails(2)
    except ValueError as e:
        caught = str(e)
    deep = fact(12)
    return total, caught, deep


if __name__ == "__main__":
    print(main())
