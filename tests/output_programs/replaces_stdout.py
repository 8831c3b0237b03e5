"""The program puts its own stream in place of sys.stdout, then restores it."""

import contextlib
import io
import sys


def captured():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print("into the buffer")
        sys.__stdout__.write("real stdout while redirected\n")
    return buf.getvalue()


got = captured()
print("buffer held", repr(got))
old = sys.stdout
sys.stdout = io.StringIO()
print("lost")
sys.stdout = old
print("back", type(sys.stdout).__name__, sys.stdout is sys.__stdout__)
