def parse(text):
    return int(text)


def load(items):
    return [parse(t) for t in items]


print("before")
try:
    load(["1", "x"])
except ValueError as e:
    print("caught", e)
load(["2", "oops"])
print("never")
