import threading


def boom(n):
    if n > 2:
        raise RuntimeError(f"worker failed at {n}")
    return boom(n + 1)


def guarded():
    try:
        boom(0)
    except RuntimeError as e:
        print("guarded caught", e)


guarded()
t = threading.Thread(target=boom, args=(0,), name="failing-worker")
t.start()
t.join()
print("main finished")
