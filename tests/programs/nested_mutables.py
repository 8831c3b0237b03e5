"""A dict of lists mutated after being passed and returned."""


def register(index, key, value):
    index.setdefault(key, []).append(value)
    return index


def snapshot_size(index):
    return {k: len(v) for k, v in index.items()}


index = {"a": [1]}
register(index, "a", 2)
register(index, "b", 3)
print(snapshot_size(index))
index["a"].clear()
index["b"].append(99)
print(index)
