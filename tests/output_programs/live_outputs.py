"""Asks the live recording for its outputs and writes them to the file in argv[1]."""

import json
import sys


def speak(n):
    print("speaking", n)
    sys.stderr.write("err line\n")
    return n


speak(1)
speak(2)
import squall.indexes  # noqa: E402

with open(sys.argv[1], "w") as f:
    json.dump(squall.indexes.outputs(), f)
