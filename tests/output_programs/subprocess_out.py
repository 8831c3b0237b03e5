"""Output of a child process and of os.write goes straight to the file descriptors."""

import os
import subprocess
import sys


def child():
    print("before child", flush=True)
    subprocess.run([sys.executable, "-c", "print('from the child')"], check=True)
    os.write(1, b"raw fd write\n")
    print("after child")


child()
sys.stdout.buffer.write(b"binary buffer write\n")
print("end")
