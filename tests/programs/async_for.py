"""`async for` over an async generator and over a class whose `__anext__` is an `async def`,
with continue, break and else, and an async comprehension, while another task runs: both run
inside the consumer's segment, which ends when their sleeps pass out through it, so the other
task's calls are never its children; StopAsyncIteration ends each loop."""
import asyncio


async def ticks(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


class Countdown:
    def __init__(self, n):
        self.n = n

    def __aiter__(self):
        return self

    async def __anext__(self):
        await asyncio.sleep(0)
        if self.n == 0:
            raise StopAsyncIteration
        self.n -= 1
        return self.n


def mark(x):
    return x


async def other():
    for i in range(3):
        mark(i)
        await asyncio.sleep(0)


async def consumer():
    out = []
    async for t in ticks(4):
        if t == 1:
            continue
        if t == 3:
            break
        out.append(mark(t))
    else:
        out.append("not reached")
    async for c in Countdown(2):
        out.append(c)
    else:
        out.append(mark("else"))
    out.append([t * 10 async for t in ticks(2)])
    return out


async def main():
    return await asyncio.gather(consumer(), other())


print(asyncio.run(main()))
