"""global and nonlocal rebinding."""

counter = 0


def bump(by):
    global counter
    counter += by
    return counter


def make_counter():
    count = 0

    def incr():
        nonlocal count
        count += 1
        return count

    return incr


c = make_counter()
print(bump(2), bump(3), c(), c(), counter)
