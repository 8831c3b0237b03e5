"""Binary writes to sys.stdout.buffer / sys.stderr.buffer mixed with text writes: print, print
with flush=True, bytes that are not valid UTF-8, a bytearray and a memoryview, a write big enough
to make the text layer flush into the buffer by itself."""

import sys


def mixed():
    print("text 1")
    sys.stdout.buffer.write(b"binary 1\n")
    print("text 2", flush=True)
    sys.stdout.buffer.write(bytearray(b"binary 2 \xff\xfe bad\n"))
    sys.stdout.write("text 3\n")
    sys.stdout.flush()
    sys.stdout.buffer.write(memoryview(b"binary 3 h\xc3\xa9llo\n"))
    sys.stderr.buffer.write(b"binary err\n")
    print("text err", file=sys.stderr, flush=True)
    return 3


def big_text():
    # more than the text layer holds back: it writes into the buffer inside this write
    sys.stdout.write("y" * 20_000 + "\n")
    sys.stdout.buffer.write(b"after big\n")
    sys.stdout.buffer.flush()


mixed()
big_text()
print("end")
