"""`async with`: suspensions inside `__aenter__` and `__aexit__` while another task runs, the body
raising with `__aexit__` suppressing it or not, two managers in one statement, one of them an
asynccontextmanager. The user resumes after `__aenter__` with the bound value and after
`__aexit__` with its result."""
import asyncio
import contextlib


def mark(x):
    return x


class Resource:
    def __init__(self, name, suppress=False):
        self.name, self.suppress = name, suppress

    async def __aenter__(self):
        await asyncio.sleep(0)
        return mark(self.name)

    async def __aexit__(self, et, ev, tb):
        await asyncio.sleep(0)
        mark(et.__name__ if et else None)
        return self.suppress


@contextlib.asynccontextmanager
async def opened(name):
    await asyncio.sleep(0)
    try:
        yield name.upper()
    finally:
        mark("closed " + name)


async def other():
    for i in range(4):
        mark(i)
        await asyncio.sleep(0)


async def user():
    async with Resource("a") as a:
        mark(a)
    async with Resource("b", suppress=True):
        raise ValueError("suppressed")
    try:
        async with Resource("c") as c, opened("d") as d:
            raise KeyError(c + d)
    except KeyError as e:
        return e.args


async def main():
    return await asyncio.gather(user(), other())


print(asyncio.run(main()))
