"""Several threads print; each line is attributed to its thread."""

import threading


def work(n):
    total = n * 10
    print(f"worker {n} total {total}")
    return total


threads = [threading.Thread(target=work, args=(i,), name=f"w{i}") for i in range(3)]
for t in threads:
    t.start()
    t.join()
print("main done")
