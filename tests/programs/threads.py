"""Two named worker threads, alive at the same time, each with its own timeline."""
import threading

results = {}
both_started = threading.Barrier(2)


def square(x):
    return x * x


def worker(label, numbers):
    both_started.wait()  # both threads are alive together: they have different idents
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
