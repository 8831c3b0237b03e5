"""sys.exit(3) from inside a function: exit code 3, nothing on stderr."""
import sys


def finish(code):
    print("finishing with", code)
    sys.exit(code)


def main():
    finish(3)
    print("never printed")


main()
