"""Coroutines with await and asyncio.gather."""
import asyncio


async def fetch(name, delay):
    await asyncio.sleep(delay)
    return f"{name}!"


async def main():
    one = await fetch("solo", 0)
    many = await asyncio.gather(fetch("a", 0.01), fetch("b", 0))
    return [one] + many


print(asyncio.run(main()))
