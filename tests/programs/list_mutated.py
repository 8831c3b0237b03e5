"""A list mutated after being passed: the recorded arg shows the contents at call time."""


def total(items):
    return sum(items)


def grow(items):
    items.append(len(items))
    return items


data = [1, 2, 3]
print(total(data))
data.append(4)
data[0] = 100
print(total(data))
print(grow(data))
data.clear()
