"""Prints and returns its arguments (tests/dap: launch with args, launch a module)."""
import sys


def main(argv):
    print(f"got {len(argv)} arguments")
    return argv


main(sys.argv[1:])
