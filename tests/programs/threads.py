"""Two named worker threads, each with its own timeline."""
import threading

results = {}


def square(x):
    return x * x


def worker(label, numbers):
    results[label] = [square(n) for n in numbers]


threads = [
    threading.Thread(target=worker, args=("left", [1, 2]), name="worker-left"),
    threading.Thread(target=worker, args=("right", [3]), name="worker-right"),
]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sorted(results.items()))
