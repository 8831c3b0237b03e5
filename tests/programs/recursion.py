"""Plain recursion: fib (tree recursion) and factorial (linear)."""


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)


print(fib(4), factorial(5))
