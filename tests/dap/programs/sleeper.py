"""Writes its pid to argv[1], then sleeps (tests/dap: disconnect while a launch records)."""
import os
import sys
import time


def main(path):
    with open(path, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)


main(sys.argv[1])
