"""`async for` / `async with` / async comprehensions at their edges: errors, messages, chaining,
tracebacks, manual send/throw/close, finalization order. Prints everything it sees; the test
(test_programs.py::test_async_protocols_same_as_python) runs it with python and under squall
(both modes) and compares the output.
"""

import asyncio
import contextlib
import functools
import gc
import os
import sys
import traceback

HERE = __file__
# Finalization order: shown only in calls mode. Full mode records the async generator itself (the
# value of `agen(...)`), and a recording keeps what it records alive: its `finally` runs later.
FINALIZATION = os.environ.get("ASYNC_PROTOCOLS_FINALIZATION") == "1"


def show(e):
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return text.replace(HERE, "<prog>")


def describe(e):
    return (
        f"{type(e).__name__}: {e} | cause={e.__cause__!r} context={e.__context__!r} suppress={e.__suppress_context__}"
    )


def run(fn, *args):
    name = fn.__name__
    try:
        r = asyncio.run(fn(*args))
    except BaseException as e:  # noqa: BLE001
        print(f"{name}: raised {describe(e)}")
        print(show(e))
    else:
        print(f"{name}: -> {r!r}")


# --- async iterables ---------------------------------------------------------------------------


async def agen(n, fail_at=None, log=None):
    try:
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"agen failed at {i}")
            await asyncio.sleep(0)
            yield i
    finally:
        if log is not None:
            log.append(f"agen({n}) closed")


class Counter:
    """`__anext__` is an `async def`."""

    def __init__(self, n):
        self.n, self.i = n, 0

    def __aiter__(self):
        return self

    async def __anext__(self):
        await asyncio.sleep(0)
        if self.i >= self.n:
            raise StopAsyncIteration
        self.i += 1
        return self.i


class Hops:
    """An awaitable whose `__await__` is a generator yielding `hops` times."""

    def __init__(self, v, hops=1):
        self.v, self.hops = v, hops

    def __await__(self):
        for _ in range(self.hops):
            yield None
        return self.v


class HopsIter:
    """`__anext__` returns `Hops` awaitables, raises StopAsyncIteration synchronously."""

    def __init__(self, n):
        self.n, self.i = n, 0

    def __aiter__(self):
        return self

    def __anext__(self):
        if self.i >= self.n:
            raise StopAsyncIteration("sync stop")
        self.i += 1
        return Hops(self.i * 10, hops=self.i)


class NoThrowAwait:
    """`__await__` returns a plain iterator (no throw/close)."""

    def __init__(self, v):
        self.v = v

    def __await__(self):
        return iter([None, None])


class NoThrowIter:
    def __init__(self, n):
        self.n, self.i = n, 0

    def __aiter__(self):
        return self

    def __anext__(self):
        if self.i >= self.n:
            raise StopAsyncIteration
        self.i += 1
        return NoThrowAwait(self.i)


async def for_agen():
    out = []
    async for x in agen(3):
        out.append(x)
    return out


async def for_counter():
    return [x async for x in Counter(3)]


async def for_hops():
    out = []
    async for x in HopsIter(3):
        out.append(x)
    return out


async def for_nothrow():
    out = []
    async for x in NoThrowIter(2):
        out.append(x)
    return out


async def for_break_continue_else():
    log = []
    out = []
    async for x in agen(6, log=log):
        if x == 1:
            continue
        if x == 4:
            break
        out.append(x)
    else:
        out.append("else-not-run")
    log.append("after break")
    async for x in agen(2, log=log):
        out.append(x)
    else:
        out.append("else-run")
    await asyncio.sleep(0)
    gc.collect()
    await asyncio.sleep(0)
    return (out, log) if FINALIZATION else out


async def for_nested_and_return():
    async for x in agen(3):
        async for y in Counter(2):
            if x == 1 and y == 2:
                return x, y
    return None


async def for_agen_raises():
    out = []
    async for x in agen(4, fail_at=2):
        out.append(x)
    return out


async def for_agen_raises_caught():
    out = []
    try:
        async for x in agen(4, fail_at=1):
            out.append(x)
    except ValueError as e:
        out.append(repr(e))
    return out


async def stop_inside():
    yield 1
    raise StopAsyncIteration("inside")


async def for_agen_raises_stopasync():
    async for _x in stop_inside():
        pass


async def for_body_raises_stopasync():
    async for _x in agen(2):
        raise StopAsyncIteration("from the body")


async def for_body_raises_in_handler():
    try:
        raise KeyError("handled")
    except KeyError:
        async for x in agen(2):
            if x == 1:
                raise ValueError("in body")


async def for_body_raises_plain():
    async for x in Counter(3):
        if x == 2:
            raise ValueError("plain body error")


async def for_not_async_iterable():
    async for _x in 1:
        pass


class AiterReturnsInt:
    def __aiter__(self):
        return 5


class AiterRaises:
    def __aiter__(self):
        raise LookupError("no aiter for you")


class AnextReturnsInt:
    def __aiter__(self):
        return self

    def __anext__(self):
        return 7


class BadAwait:
    def __await__(self):
        raise ValueError("await failed")


class JunkAwait:
    def __await__(self):
        return 5


async def _coro():
    return 1


class CoroAwait:
    # not a function of this (recorded) module: the recording would keep the coroutine it
    # returns alive, and "never awaited" would then be reported later than without squall
    __await__ = functools.partial(_coro)


class AnextGives:
    def __init__(self, make):
        self.make = make

    def __aiter__(self):
        return self

    def __anext__(self):
        return self.make()


class AnextRaises:
    def __aiter__(self):
        return self

    def __anext__(self):
        raise KeyError("sync anext error")


async def for_aiter_returns_int():
    async for _x in AiterReturnsInt():
        pass


async def for_aiter_raises():
    async for _x in AiterRaises():
        pass


async def for_anext_returns_int():
    async for _x in AnextReturnsInt():
        pass


async def for_anext_bad_await():
    async for _x in AnextGives(BadAwait):
        pass


async def for_anext_bad_await_in_handler():
    try:
        1 / 0  # noqa: B018 - raises on purpose
    except ZeroDivisionError:
        async for _x in AnextGives(BadAwait):
            pass


async def for_anext_junk_await():
    async for _x in AnextGives(JunkAwait):
        pass


async def for_anext_coro_await():
    it = AnextGives(CoroAwait)
    try:
        async for _x in it:
            pass
    finally:
        gc.collect()


async def for_anext_raises():
    async for _x in AnextRaises():
        pass


async def comprehensions():
    a = [x async for x in agen(3)]
    b = {x async for x in Counter(3) if x != 2}
    c = {x: y async for x in agen(2) for y in "ab"}
    d = [(i, x) for i in range(2) async for x in HopsIter(2)] if sys.version_info >= (3, 11) else []
    e = [x async for x in (y * 2 async for y in agen(3))]
    return a, sorted(b), c, d, e


async def comprehension_error():
    return [x async for x in 1]


async def comprehension_agen_raises():
    return [x async for x in agen(3, fail_at=1)]


# --- async context managers --------------------------------------------------------------------


class CM:
    def __init__(self, log, suppress=False, exit_raises=None, enter_raises=None):
        self.log, self.suppress = log, suppress
        self.exit_raises, self.enter_raises = exit_raises, enter_raises

    async def __aenter__(self):
        self.log.append("enter")
        await asyncio.sleep(0)
        if self.enter_raises is not None:
            raise self.enter_raises
        return self

    async def __aexit__(self, et, ev, tb):
        self.log.append(f"exit {et.__name__ if et else None}")
        await asyncio.sleep(0)
        if self.exit_raises is not None:
            raise self.exit_raises
        return self.suppress


async def with_plain():
    log = []
    async with CM(log) as cm:
        log.append(f"body {type(cm).__name__}")
    return log


async def with_body_raises_suppressed():
    log = []
    async with CM(log, suppress=True):
        raise ValueError("suppressed")
    log.append("after")
    return log


async def with_body_raises_not_suppressed():
    log = []
    async with CM(log):
        raise ValueError("propagates")


async def with_exit_raises():
    async with CM([], exit_raises=KeyError("from aexit")):
        raise ValueError("body")


async def with_exit_raises_no_body_error():
    async with CM([], exit_raises=KeyError("from aexit")):
        pass


async def with_enter_raises():
    async with CM([], enter_raises=LookupError("from aenter")):
        pass


async def with_multi_and_tuple_target():
    log = []
    async with CM(log) as a, CM(log) as b:
        log.append(a is not b)

    class Pair:
        async def __aenter__(self):
            return (1, 2)

        async def __aexit__(self, *exc):
            return None

    async with Pair() as (x, y):
        log.append(x + y)
    return log


async def with_return_break_continue():
    log = []
    for i in range(3):
        async with CM(log):
            if i == 0:
                continue
            if i == 1:
                break
    async with CM(log):
        return log


@contextlib.asynccontextmanager
async def acm(log):
    log.append("acm enter")
    await asyncio.sleep(0)
    try:
        yield "resource"
    except ValueError as e:
        log.append(f"acm handled {e}")
    finally:
        await asyncio.sleep(0)
        log.append("acm exit")


async def with_asynccontextmanager():
    log = []
    async with acm(log) as r:
        log.append(r)
        raise ValueError("handled by acm")
    async with acm(log):
        pass
    return log


async def with_not_a_cm():
    async with 1:
        pass


class OnlyEnter:
    async def __aenter__(self):
        return 1


class OnlyExit:
    async def __aexit__(self, *a):
        return 1


class EnterReturnsInt:
    def __aenter__(self):
        return 5

    def __aexit__(self, *a):
        return 6


class ExitReturnsInt:
    async def __aenter__(self):
        return 5

    def __aexit__(self, *a):
        return 6


class EnterBadAwait:
    def __aenter__(self):
        return BadAwait()

    async def __aexit__(self, *a):
        return None


class EnterJunkAwait:
    def __aenter__(self):
        return JunkAwait()

    async def __aexit__(self, *a):
        return None


class EnterCoroAwait:
    def __aenter__(self):
        return CoroAwait()

    async def __aexit__(self, *a):
        return None


class CallableEnter:
    def __call__(self):
        return Hops("called", hops=2)


class EnterIsCallableObject:
    __aenter__ = CallableEnter()

    async def __aexit__(self, *a):
        return None


class RaisingDescriptor:
    def __get__(self, obj, tp):
        raise AttributeError("descriptor says no")


class EnterDescriptorRaises:
    __aenter__ = RaisingDescriptor()

    async def __aexit__(self, *a):
        return None


class InstanceOnly:
    def __init__(self):
        self.__aenter__ = lambda: Hops(1)
        self.__aexit__ = lambda *a: Hops(2)


async def with_only_enter():
    async with OnlyEnter():
        pass


async def with_only_exit():
    async with OnlyExit():
        pass


async def with_enter_returns_int():
    async with EnterReturnsInt():
        pass


async def with_exit_returns_int():
    async with ExitReturnsInt():
        pass


async def with_exit_returns_int_body_raises():
    async with ExitReturnsInt():
        raise ValueError("body")


async def with_enter_bad_await():
    async with EnterBadAwait():
        pass


async def with_enter_junk_await():
    async with EnterJunkAwait():
        pass


async def with_enter_coro_await():
    cm = EnterCoroAwait()
    try:
        async with cm:
            pass
    finally:
        gc.collect()


async def with_enter_callable_object():
    async with EnterIsCallableObject() as v:
        return v


async def with_enter_descriptor_raises():
    async with EnterDescriptorRaises():
        pass


async def with_instance_attributes_only():
    async with InstanceOnly():
        pass


async def waiter(fut):
    return await fut


class ReturnsBusy:
    def __init__(self, coro):
        self.coro = coro

    def __aenter__(self):
        return self.coro

    async def __aexit__(self, *a):
        return None


async def with_coroutine_awaited_already():
    fut = asyncio.get_running_loop().create_future()
    c = waiter(fut)
    t = asyncio.ensure_future(c)
    await asyncio.sleep(0)
    try:
        async with ReturnsBusy(c):
            pass
    finally:
        fut.set_result(1)
        await t


async def with_cancelled_in_aexit():
    log = []

    async def task():
        async with CM(log):
            await asyncio.sleep(0)

    t = asyncio.ensure_future(task())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        log.append("cancelled")
    return log


async def for_cancelled_while_waiting():
    log = []

    async def slow():
        try:
            yield 1
            await asyncio.sleep(10)
            yield 2
        finally:
            log.append("slow closed")

    async def task():
        async for x in slow():
            log.append(x)

    t = asyncio.ensure_future(task())
    for _ in range(3):
        await asyncio.sleep(0)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        log.append("cancelled")
    return log


# --- driven by hand: send / throw / close -------------------------------------------------------


class Req:
    def __init__(self, tag):
        self.tag = tag

    def __await__(self):
        got = yield ("req", self.tag)
        return (self.tag, got)


class ReqIter:
    def __init__(self, n):
        self.n, self.i = n, 0

    def __aiter__(self):
        return self

    def __anext__(self):
        if self.i >= self.n:
            raise StopAsyncIteration
        self.i += 1
        return Req(self.i)


class ReqCM:
    def __aenter__(self):
        return Req("enter")

    def __aexit__(self, *exc):
        return Req(f"exit {exc[0].__name__ if exc[0] else None}")


async def manual_for():
    out = []
    async for v in ReqIter(3):
        out.append(v)
    return out


async def manual_with():
    async with ReqCM() as got:
        return got


async def manual_nothrow():
    async for _v in NoThrowIter(2):
        pass


def drive(label, make, steps):
    c = make()
    try:
        for how, arg in steps:
            if how == "send":
                print(label, "send", repr(arg), "->", repr(c.send(arg)))
            elif how == "throw":
                print(label, "throw", repr(arg), "->", repr(c.throw(arg)))
            elif how == "close":
                print(label, "close ->", repr(c.close()))
    except StopIteration as e:
        print(label, "finished with", repr(e.value))
    except BaseException as e:  # noqa: BLE001
        print(label, "raised", describe(e))
        print(show(e))


def main():
    for fn in (
        for_agen,
        for_counter,
        for_hops,
        for_nothrow,
        for_break_continue_else,
        for_nested_and_return,
        for_agen_raises,
        for_agen_raises_caught,
        for_agen_raises_stopasync,
        for_body_raises_stopasync,
        for_body_raises_in_handler,
        for_body_raises_plain,
        for_not_async_iterable,
        for_aiter_returns_int,
        for_aiter_raises,
        for_anext_returns_int,
        for_anext_bad_await,
        for_anext_bad_await_in_handler,
        for_anext_junk_await,
        for_anext_coro_await,
        for_anext_raises,
        comprehensions,
        comprehension_error,
        comprehension_agen_raises,
        with_plain,
        with_body_raises_suppressed,
        with_body_raises_not_suppressed,
        with_exit_raises,
        with_exit_raises_no_body_error,
        with_enter_raises,
        with_multi_and_tuple_target,
        with_return_break_continue,
        with_asynccontextmanager,
        with_not_a_cm,
        with_only_enter,
        with_only_exit,
        with_enter_returns_int,
        with_exit_returns_int,
        with_exit_returns_int_body_raises,
        with_enter_bad_await,
        with_enter_junk_await,
        with_enter_coro_await,
        with_enter_callable_object,
        with_enter_descriptor_raises,
        with_instance_attributes_only,
        with_coroutine_awaited_already,
        with_cancelled_in_aexit,
        for_cancelled_while_waiting,
    ):
        run(fn)
    drive("for", manual_for, [("send", None), ("send", "a"), ("send", "b"), ("send", "c")])
    drive("for-throw", manual_for, [("send", None), ("throw", KeyError("thrown"))])
    drive("for-throw-stop", manual_for, [("send", None), ("throw", StopIteration("s"))])
    drive("for-close", manual_for, [("send", None), ("close", None), ("send", None)])
    drive("with", manual_with, [("send", None), ("send", 1), ("send", 2)])
    drive("with-throw", manual_with, [("send", None), ("send", 1), ("throw", ValueError("v"))])
    drive("nothrow-throw", manual_nothrow, [("send", None), ("throw", KeyError("k"))])
    drive("nothrow-close", manual_nothrow, [("send", None), ("close", None)])


main()
