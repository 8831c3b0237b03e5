"""An exception raised two frames down, passing through one frame, caught by the caller."""


class ParseError(ValueError):
    pass


def parse(text):
    if not text.isdigit():
        raise ParseError(f"not a number: {text!r}")
    return int(text)


def parse_all(items):
    return [parse(t) for t in items]


def main():
    try:
        return parse_all(["1", "2", "x3", "4"])
    except ParseError as e:
        print("caught", e)
        return None


print(main())
