"""A write that raises: the traceback is the one plain python prints."""

import sys


def bad():
    try:
        sys.stdout.write(5)
    except TypeError as e:
        print("caught", e)
    sys.stderr.write(b"bytes")


bad()
