"""KeyboardInterrupt raised in a function and caught by its caller."""


def long_task(steps):
    for i in range(steps):
        if i == 2:
            raise KeyboardInterrupt
    return steps


def main():
    try:
        long_task(5)
    except KeyboardInterrupt:
        return "interrupted, cleaned up"


print(main())
