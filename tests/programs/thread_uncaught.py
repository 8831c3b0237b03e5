"""An exception that escapes a thread's target: the thread dies, the program goes on (exit 0)."""
import threading


def check(n):
    if n > 2:
        raise RuntimeError(f"too big: {n}")
    return n


def work():
    for i in range(5):
        check(i)


t = threading.Thread(target=work, name="doomed")
t.start()
t.join()
print("main still running")
