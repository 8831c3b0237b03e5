def loop():
    raise KeyboardInterrupt


print("start", flush=True)
loop()
