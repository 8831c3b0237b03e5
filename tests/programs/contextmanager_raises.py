"""A @contextmanager whose with-body raises: the generator sees the exception at its yield."""
from contextlib import contextmanager


@contextmanager
def section(name):
    print("enter", name)
    try:
        yield name.upper()
    finally:
        print("exit", name)


def risky(x):
    with section("risky") as tag:
        raise KeyError(f"{tag}:{x}")


def main():
    try:
        risky(7)
    except KeyError as e:
        return f"caught {e}"


print(main())
