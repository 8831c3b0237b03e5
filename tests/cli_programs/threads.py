import threading
import time


def work(n, out):
    time.sleep(0.05)
    out.append(sum(i * i for i in range(n)))
    print("worker done", out[-1])


out = []
t = threading.Thread(target=work, args=(1000, out), name="late-worker")
t.start()
print("main done")  # python waits for the non-daemon thread at exit
