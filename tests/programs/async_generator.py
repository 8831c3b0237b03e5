"""An async generator driven by explicit awaits: __anext__, asend and aclose (`async for` over
one: async_for.py)."""
import asyncio


async def ticks(n):
    i = 0
    try:
        while i < n:
            await asyncio.sleep(0)
            got = yield i * 10
            i += 1 if got is None else got
    finally:
        print("ticks closed at", i)


async def main():
    agen = ticks(5)
    first = await agen.__anext__()
    second = await agen.asend(2)
    await agen.aclose()
    return first, second


print(asyncio.run(main()))
