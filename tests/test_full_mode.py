"""Full mode: every sub-expression and local binding is recorded, and behaviour never changes.

Each test runs a program plainly and rewritten (full mode, real engine), compares the outcomes
(value, or exception type/message/formatted traceback), then checks the recorded expr/bind
entries of the main thread."""

import os
import re
import subprocess
import sys
import textwrap
import threading
import traceback
import types

import pytest

try:
    import squall  # noqa: F401
except ImportError:  # running from a checkout without `maturin develop`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "python"))

import squall
from squall import _engine, config, indexes
from squall._instrument import rewrite

_n = [0]


def _tid():
    tids = _engine.live().all_flows().get(_engine.current_flow(), [])
    nid = threading.get_native_id()
    return nid if nid in tids else threading.get_ident()


def _outcome(fn, a, file):
    try:
        return ("ok", fn(*a))
    except BaseException as e:  # noqa: BLE001
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        # keep only our file's frames (and their source/caret lines)
        return ("exc", type(e).__name__, str(e), _own_frames(tb, file))


def _own_frames(tb, file):
    out, keep = [], False
    for ln in tb.splitlines():
        if ln.startswith('  File "'):
            keep = file in ln
        elif not ln.startswith("    "):
            keep = False
        if keep:
            out.append(ln)
    return out


def run(tmp_path, src, entry="main", *a, mode=None, check_same=True):
    """(outcome, entries of this thread's timeline, source lines)."""
    src = textwrap.dedent(src)
    _n[0] += 1
    path = tmp_path / f"fm_{_n[0]}.py"
    path.write_text(src, encoding="utf-8")
    file = str(path)
    plain_mod = types.ModuleType(f"fm_plain_{_n[0]}")
    sys.modules[plain_mod.__name__] = plain_mod
    plain_ns = plain_mod.__dict__
    exec(compile(src, file, "exec", dont_inherit=True), plain_ns)
    plain = _outcome(plain_ns[entry], a, file)
    mod = types.ModuleType(f"fm_{_n[0]}")
    sys.modules[mod.__name__] = mod
    ns = mod.__dict__
    code = rewrite.compile_instrumented(src, file, mod.__name__, mode=mode)
    was = _engine.is_recording()
    squall.api.clear_recordings()
    squall.api.start_recording(install_hook=False)
    try:
        exec(code, ns)
        got = _outcome(ns[entry], a, file)
    finally:
        if not was:
            squall.api.stop_recording()
    if check_same:
        assert got == plain
    tid = _tid()
    entries = [
        _engine.live().entry(_engine.current_flow(), tid, i)
        for i in range(_engine.live().timeline_len(_engine.current_flow(), tid))
    ]
    return got, entries, src.splitlines()


def text(lines, coord):
    l0, c0, l1, c1 = coord
    if l0 == l1:
        return lines[l0 - 1][c0:c1]
    return "\n".join([lines[l0 - 1][c0:]] + lines[l0 : l1 - 1] + [lines[l1 - 1][:c1]])


def exprs(entries, lines):
    return [(text(lines, e["coord"]), _engine.live().deref(e["result_ref"])) for e in entries if e["type"] == "expr"]


def binds(entries):
    return [(e["symbol"], _engine.live().deref(e["value_ref"])) for e in entries if e["type"] == "bind"]


# --- what is recorded --------------------------------------------------------------------------


def test_exprs_and_binds_basic(tmp_path):
    src = """
    K = 10
    def main():
        x = 3
        y = x * K + 1
        a, (b, *c) = 1, (2, 3, 4)
        y += a
        return [y, b, c]
    """
    res, ent, lines = run(tmp_path, src)
    assert res == ("ok", [32, 2, [3, 4]])
    ex = exprs(ent, lines)
    assert ("K", 10) in ex and ("x * K", 30) in ex
    assert ("x", 3) not in ex  # plain loads of locals are carried by bindings
    assert not any(t in ("1", "3", "10") for t, _ in ex)  # constants are not recorded
    assert ("x * K + 1", 31) not in ex  # the bound value is carried by the binding
    assert binds(ent) == [("x", 3), ("y", 31), ("a", 1), ("b", 2), ("c", [3, 4]), ("y", 32)]
    # the engine's bindings query sees the latest values
    last = len(ent) - 1
    got = {b["symbol"]: _engine.live().deref(b["value_ref"]) for b in indexes.bindings(0, _tid(), last)}
    assert got["y"] == 32 and got["c"] == [3, 4]


def test_method_calls_slices_attrs_and_globals(tmp_path):
    src = """
    import math
    class P:
        def __init__(self):
            self.items = [5, 6, 7, 8]
    def main():
        p = P()
        s = p.items[1:len(p.items) - 1]
        return math.floor(2.5) + p.items.count(6) + s[-1]
    """
    res, ent, lines = run(tmp_path, src)
    assert res == ("ok", 10)
    ex = [t for t, _ in exprs(ent, lines)]
    assert "p.items" in ex and "len(p.items)" in ex and "len(p.items) - 1" in ex
    assert "math" in ex and "math.floor(2.5)" in ex and "p.items.count(6)" in ex
    assert "math.floor" not in ex and "p.items.count" not in ex  # never the method itself
    assert "P()" not in ex  # `p = P()`: the binding carries it
    assert "s[-1]" in ex
    assert "-1" not in ex  # a constant
    # find_expr_entry by coord and by predicate
    coord = next(e["coord"] for e in ent if e["type"] == "expr" and text(lines, e["coord"]) == "len(p.items)")
    hit = indexes.find_expr_entry(0, _tid(), coord=tuple(coord))
    assert hit is not None and _engine.live().deref(hit["result_ref"]) == 4


def test_short_circuit_and_evaluation_order(tmp_path):
    src = """
    log = []
    def ident(fn):
        return fn
    @ident  # decorated: not a known plain function, so its calls are recorded as exprs
    def f(x):
        log.append(x)
        return x
    def main():
        a = f(0) or f(1) and f(2)
        b = f(3) if f(0) else f(4)
        c = [f(5), f(6)][f(1)]
        d = {f(7): f(8)}
        e = f(9) < f(10) < f(0) < f(11)
        return log, a, b, c, d, e
    """
    res, ent, lines = run(tmp_path, src)
    ex = exprs(ent, lines)
    texts = [t for t, _ in ex]
    assert "f(11)" not in texts and "f(3)" not in texts  # not evaluated, not recorded
    assert ("f(4)", 4) in ex and ("f(1) and f(2)", 2) in ex and ("f(0)", 0) in ex
    assert ("f(9) < f(10) < f(0)", False) not in ex  # chained comparisons: only the whole
    assert ("f(9) < f(10) < f(0) < f(11)", False) not in ex  # bound to `e`: carried by the binding
    assert binds(ent)[-1] == ("e", False)
    assert res[1][0] == [0, 1, 2, 0, 4, 5, 6, 1, 7, 8, 9, 10, 0]


def test_calls_to_plain_module_functions_are_recorded_by_the_callee(tmp_path):
    src = """
    def sq(v):
        return v * v
    def main():
        n = 3
        return sq(n + 1) + abs(-n)
    """
    res, ent, lines = run(tmp_path, src)
    assert res == ("ok", 19)
    ex = [t for t, _ in exprs(ent, lines)]
    assert "sq(n + 1)" not in ex and "n + 1" not in ex  # the fn-call of sq holds 4, its return 16
    assert "abs(-n)" in ex and "-n" in ex
    call = next(e for e in ent if e["type"] == "fn-call" and e["fn_name"] == "sq")
    assert list(_engine.live().deref(call["fn_args_ref"])) == [4]


def test_call_statements_and_tests_are_recorded_on_their_line(tmp_path):
    # A call to a plain module function alone on a line (or as an `if`/`while`/`assert` test)
    # leaves an expr entry at the call's coordinate, after the callee's return, holding its
    # value: else nothing would say the line ran (no gutter count, no stop for next-over).
    src = """
    def log(acc, v):
        acc.append(v)
    def small(v):
        return v < 2
    def main():
        acc = []
        for i in range(3):
            log(acc, i)
            if small(i):
                log(acc, -i)
        assert small(0)
        x = small(5) or log(acc, 9)
        return acc
    """
    res, ent, lines = run(tmp_path, src)
    assert res == ("ok", [0, 0, 1, -1, 2, 9])
    ex = exprs(ent, lines)
    assert [v for t, v in ex if t == "log(acc, i)"] == [None, None, None]
    assert [v for t, v in ex if t == "log(acc, -i)"] == [None, None]
    assert [v for t, v in ex if t == "small(i)"] == [True, True, False]
    assert [v for t, v in ex if t == "small(0)"] == [True]
    # inside a larger expression the call stays unrecorded (the binding of x is on the line)
    assert not [t for t, _ in ex if t in ("small(5)", "log(acc, 9)")]
    assert ("x", None) in binds(ent)
    # the entry comes after the callee returned, in the caller's frame
    first = next(i for i, e in enumerate(ent) if e["type"] == "expr" and text(lines, e["coord"]) == "log(acc, i)")
    assert ent[first - 1]["type"] == "fn-return"
    assert ent[ent[first - 1]["fn_call_idx"]]["fn_name"] == "log"
    assert ent[first]["fn_call_idx"] == next(e["idx"] for e in ent if e["type"] == "fn-call" and e["fn_name"] == "main")


def test_for_with_except_comprehension_walrus_import_global(tmp_path):
    src = """
    import contextlib
    G = 0
    def main():
        global G
        out = []
        for i, ch in enumerate("ab"):
            out.append(ch * (i + 1))
        with contextlib.nullcontext(5) as cm:
            pass
        try:
            1 / 0
        except ZeroDivisionError as err:
            msg = str(err)
        sq = [v * v for v in range(3) if v]
        total = sum(w for w in range(4))
        found = [y for x in range(5) if (y := x * 10) > 20]
        import os.path as osp, json
        G = G + 1
        return out, cm, msg, sq, total, found, y, osp.sep, G
    """
    res, ent, lines = run(tmp_path, src)
    assert res[0] == "ok"
    b = binds(ent)
    syms = [s for s, _ in b]
    assert ("i", 0) in b and ("ch", "a") in b and ("i", 1) in b
    assert ("cm", 5) in b and ("err", None) not in b and "err" in syms
    assert ("msg", "division by zero") in b
    assert [v for s, v in b if s == "v"] == [0, 1, 2]  # comprehension variable, every round
    assert "w" not in syms  # lazy generator expressions are not recorded inside
    assert [v for s, v in b if s == "y"] == [0, 10, 20, 30, 40]  # walrus, in the function's frame
    assert "osp" in syms and "json" in syms and ("G", 1) in b


@pytest.mark.skipif(sys.version_info < (3, 10), reason="match needs 3.10")
def test_match_captures(tmp_path):
    src = """
    def main():
        out = []
        for cmd in [("go", 3), {"k": 1, "z": 2}, [1, 2, 3], "x"]:
            match cmd:
                case ("go", n) if n > 2:
                    out.append(n)
                case {"k": kv, **rest}:
                    out.append((kv, rest))
                case [first, *others]:
                    out.append((first, others))
                case str() as s:
                    out.append(s)
        return out
    """
    res, ent, lines = run(tmp_path, src)
    b = binds(ent)
    assert ("n", 3) in b and ("kv", 1) in b and ("rest", {"z": 2}) in b
    assert ("first", 1) in b and ("others", [2, 3]) in b and ("s", "x") in b


def test_calls_mode_records_no_exprs(tmp_path):
    src = """
    def main():
        x = abs(-3)
        return x + 1
    """
    res, ent, _ = run(tmp_path, src, mode="calls")
    assert res == ("ok", 4)
    assert {e["type"] for e in ent} <= {"fn-call", "fn-return", "fn-unwind"}


# --- behaviour never changes -------------------------------------------------------------------


def test_tracebacks_and_carets(tmp_path):
    src = """
    class A:
        b = None
    def main():
        a = A()
        return len(str(a.b.c)) + 1
    """
    res, _, _ = run(tmp_path, src)  # formatted tracebacks (carets included) compared in run()
    assert res[0] == "exc" and res[1] == "AttributeError"
    src2 = """
    def g(d):
        return d["k"] * 2
    def main():
        data = {"q": 1}
        return [g(data)] + [1]
    """
    res, _, _ = run(tmp_path, src2)
    assert res[1] == "KeyError"


def test_names_closures_super_class_cell_locals(tmp_path):
    src = """
    class Base:
        def hello(self):
            return "base"
    class C(Base):
        def hello(self):
            return super().hello() + "+c" + __class__.__name__
        def names(self):
            def inner():
                return n + 1
            n = 1
            r = inner()
            loc = sorted(locals())
            return inner.__code__.co_name, inner.__qualname__, r, loc
    def counter():
        c = 0
        def inc():
            nonlocal c
            c += 1
            return c
        return inc
    def main():
        inc = counter()
        inc(); inc()
        return C().hello(), C().names(), inc(), (lambda q: q * 2)(4)
    """
    res, ent, _ = run(tmp_path, src)
    assert res[1][0] == "base+cC" and res[1][1][1] == "C.names.<locals>.inner"
    assert res[1][1][3] == ["inner", "n", "r", "self"]
    assert ("c", 3) in binds(ent)


def test_generators_async_finally_del(tmp_path):
    src = """
    import asyncio
    def gen(n):
        try:
            i = 0
            while i < n:
                got = yield i * 2
                i += 1
                if got:
                    n = n + got
        finally:
            cleanup = "done"
    def fin():
        try:
            return 1
        finally:
            return 2
    async def co(x):
        await asyncio.sleep(0)
        y = x + 1
        return y
    def main():
        g = gen(2)
        a = [next(g), g.send(1), next(g)]
        g.close()
        z = [1, 2]
        del z[0]
        w = 5
        del w
        return a, fin(), asyncio.run(co(1)), z
    """
    res, ent, _ = run(tmp_path, src)
    assert res == ("ok", ([0, 2, 4], 2, 2, [2]))
    b = binds(ent)
    assert ("got", 1) in b and ("n", 3) in b and ("cleanup", "done") in b and ("y", 2) in b


def test_descriptors_dataclasses_annotations(tmp_path):
    src = """
    from __future__ import annotations
    import dataclasses
    from typing import List
    @dataclasses.dataclass
    class D:
        x: int
        y: List[int] = dataclasses.field(default_factory=list)
        @property
        def twice(self) -> int:
            r: int = self.x * 2
            return r
    def main():
        d = D(3)
        ann: "Undefined" = 1
        return d.twice, D.__annotations__, dataclasses.fields(D)[1].name, main.__annotations__
    """
    res, ent, _ = run(tmp_path, src)
    assert res[1][0] == 6 and res[1][1] == {"x": "int", "y": "List[int]"}
    assert ("r", 6) in binds(ent)


def test_fstrings(tmp_path):
    src = """
    def main():
        x, w = 3.14159, 8
        name = "v"
        s1 = f"{x:.2f}|{x!r:>{w}}|{name=}|{'lit'}|{x * 2:{'>'}{w}.1f}"
        return s1
    """
    res, ent, lines = run(tmp_path, src)
    ex = [t for t, _ in exprs(ent, lines)]
    assert "x * 2" in ex


@pytest.mark.skipif(sys.version_info < (3, 12), reason="nested quotes in f-strings need 3.12")
def test_nested_fstrings_312(tmp_path):
    src = 'def main():\n    a = 2\n    return f"{f"{a + 1}"}-{f"{f"{a * 3}"}"}"\n'
    res, ent, lines = run(tmp_path, src)
    assert res == ("ok", "3-6")
    ex = [t for t, _ in exprs(ent, lines)]
    assert "a + 1" in ex and "a * 3" in ex


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameters need 3.12")
def test_type_params_312(tmp_path):
    src = """
    type Pair[T] = tuple[T, T]
    def first[T](xs: list[T]) -> T:
        head = xs[0]
        return head
    class Box[T]:
        def __init__(self, v: T):
            self.v = v
        def get(self) -> T:
            return self.v
    def main():
        return first([4, 5]), Box(7).get(), str(Pair.__value__), first.__type_params__[0].__name__
    """
    res, ent, _ = run(tmp_path, src)
    assert res[1][:2] == (4, 7)
    assert ("head", 4) in binds(ent)


def test_walrus_in_comprehension_binds_enclosing(tmp_path):
    src = """
    def main():
        vals = [last := v for v in range(3)]
        return vals, last
    """
    res, ent, _ = run(tmp_path, src)
    assert res == ("ok", ([0, 1, 2], 2))
    assert [v for s, v in binds(ent) if s == "last"] == [0, 1, 2]


ASYNC_IMPLICIT = """
import asyncio
async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i
class CM:
    async def __aenter__(self):
        await asyncio.sleep(0)
        return "res"
    async def __aexit__(self, *exc):
        return exc[0] is KeyError
async def co():
    out = []
    async for x in agen(2):
        out.append(x)
    async with CM() as r:
        out.append(r)
        raise KeyError("suppressed by __aexit__")
    out += [y async for y in agen(1)]
    return out
def main():
    return asyncio.run(co())
"""


@pytest.mark.parametrize("mode", ["full", "calls"])
def test_async_for_with_and_comprehension_awaits_are_suspensions(tmp_path, mode):
    # The implicit awaits (`__anext__()`, `__aenter__()`, `__aexit__()`) of rewritten delegates
    # (agen, CM's methods) nest them inside co's segment, as `await` of a rewritten coroutine
    # does (crates/squall_python/src/recorder/delegation.rs): co's segment ends only when what
    # a delegate awaits (asyncio.sleep's coroutine) passes out through co to the event loop,
    # and the delegate's resume re-opens co first. The awaited result (the item, the bound
    # value, the suppress flag; the exception's type when the await raised: StopAsyncIteration
    # ends a loop) is the expression value at the site. (A delegate squall did not rewrite ends
    # the segment at the statement with the awaitable's type:
    # test_async_for_over_code_squall_did_not_rewrite_suspends_at_each_item.)
    res, ent, lines = run(tmp_path, ASYNC_IMPLICIT, mode=mode)
    assert res == ("ok", [0, 1, "res", 0])
    sites = {"async for x in agen(2)", "async with CM() as r", "y in agen(1)"}
    segs = _co_segments(ent, lines, sites)
    StopAsyncIteration = "<class 'StopAsyncIteration'>"  # noqa: N806 - how the recording shows it
    # agen's `await asyncio.sleep(0)` passes out through co, then agen's resume re-opens co.
    slept = [("suspend", "async for x in agen(2)", "<coroutine>"), ("resume", None)]
    assert segs == [
        *slept,
        ("got", 0),
        *slept,
        ("got", 1),
        ("got", StopAsyncIteration),
        ("suspend", "async with CM() as r", "<coroutine>"),
        ("resume", None),
        ("got", "res"),
        ("got", True),
        ("suspend", "y in agen(1)", "<coroutine>"),
        ("resume", None),
        ("got", 0),
        ("got", StopAsyncIteration),
        ("suspend", "return out", [0, 1, "res", 0]),
    ]
    if mode == "full":  # bindings and the iterable are still recorded
        b = binds(ent)
        assert ("x", 0) in b and ("x", 1) in b and ("r", "res") in b and ("y", 0) in b
        assert any(t == "agen(2)" and getattr(v, "type_name", None) == "async_generator" for t, v in exprs(ent, lines))
    else:  # only the awaited results
        assert binds(ent) == [] and {t for t, v in exprs(ent, lines)} == sites


ASYNC_UNREWRITTEN = """
import asyncio
NS = {}
exec("async def agen(n):\\n    for i in range(n):\\n        yield i\\n", NS)  # not rewritten
async def co():
    out = []
    async for x in NS["agen"](2):
        out.append(x)
    return out
def main():
    return asyncio.run(co())
"""


@pytest.mark.parametrize("mode", ["full", "calls"])
def test_async_for_over_code_squall_did_not_rewrite_suspends_at_each_item(tmp_path, mode):
    # No recorded frame runs inside co: each `__anext__()` ends co's segment at the statement,
    # shown with the awaitable's type, and the next segment starts with its result (the item;
    # StopAsyncIteration's type ends the loop).
    res, ent, lines = run(tmp_path, ASYNC_UNREWRITTEN, mode=mode)
    assert res == ("ok", [0, 1])
    segs = _co_segments(ent, lines, sites=set())
    site = 'async for x in NS["agen"](2)'
    asend = ("suspend", site, _shown(_asend_type()))
    stop = "<class 'StopAsyncIteration'>"
    assert segs == [
        asend,
        ("resume", 0),
        asend,
        ("resume", 1),
        asend,
        ("resume", stop),
        ("suspend", "return out", [0, 1]),
    ]


def _co_segments(ent, lines, sites):
    """co's segments in order: ("suspend", statement, value shown; a coroutine as
    "<coroutine>"), ("resume", sent value) and ("got", value) of an expression at `sites`."""
    co_form = next(e["form_id"] for e in ent if e.get("fn_name") == "co")
    segs = []
    for e in ent:
        if e["type"] == "fn-return" and _engine.live().entry(0, _tid(), e["fn_call_idx"])["form_id"] == co_form:
            shown = _shown(_engine.live().deref(e["result_ref"]))
            shown = "<coroutine>" if str(shown).startswith("<coroutine#") else shown
            segs.append(("suspend", text(lines, e["coord"]), shown))
        elif e["type"] == "fn-resume" and e["form_id"] == co_form:
            segs.append(("resume", _shown(_engine.live().deref(e["fn_args_ref"])[0])))
        elif e["type"] == "expr" and e["form_id"] == co_form and text(lines, e["coord"]) in sites:
            segs.append(("got", _shown(_engine.live().deref(e["result_ref"]))))
    return segs


def _asend_type():
    async def g():
        yield 1

    a = g().__anext__()
    a.close()
    return type(a)


def _coroutine_type():
    async def c():
        pass

    o = c()
    o.close()
    return type(o)


@pytest.mark.parametrize("mode", ["full", "calls"])
def test_async_implicit_awaits_with_an_explicit_engine(mode):
    # An engine object without wrappers of its own (tests' FakeEngine): the real engine's
    # wrappers record through its suspend / resume.
    sys.path.insert(0, os.path.dirname(__file__))
    from _fake_engine import FakeEngine

    eng = FakeEngine()
    ns = {"__name__": "fm_explicit"}
    exec(
        rewrite.compile_instrumented(textwrap.dedent(ASYNC_IMPLICIT), "<fm_explicit>", "fm_explicit", eng, mode=mode),
        ns,
    )
    assert ns["main"]() == [0, 1, "res", 0]
    co = [(k, v) for k, f, v in ((e[0], e[1], e[2]) for e in eng.events if e[0] in ("suspend", "resume")) if f == "co"]
    asend, coro = _asend_type(), _coroutine_type()
    assert co == [
        ("suspend", asend),
        ("resume", 0),
        ("suspend", asend),
        ("resume", 1),
        ("suspend", asend),
        ("resume", StopAsyncIteration),
        ("suspend", coro),
        ("resume", "res"),
        ("suspend", coro),
        ("resume", True),
        ("suspend", asend),
        ("resume", 0),
        ("suspend", asend),
        ("resume", StopAsyncIteration),
    ]


def test_async_errors_and_tracebacks_unchanged(tmp_path):
    # Errors raised by the protocols themselves: same type, message and traceback (carets too).
    src = """
    import asyncio
    class NoAwait:
        def __aiter__(self):
            return self
        def __anext__(self):
            return 5
    class EnterInt:
        def __aenter__(self):
            return 5
        def __aexit__(self, *a):
            return 6
    async def f1():
        async for x in 1:
            pass
    async def f2():
        async for x in NoAwait():
            pass
    async def f3():
        async with 1:
            pass
    async def f4():
        async with EnterInt():
            pass
    async def f5():
        return [x async for x in 2]
    def main(which):
        return asyncio.run(globals()[which]())
    """
    for which in ("f1", "f2", "f3", "f4", "f5"):
        for mode in ("full", "calls"):
            res, _, _ = run(tmp_path, src, "main", which, mode=mode)
            assert res[0] == "exc" and res[1] in ("TypeError", "AttributeError"), res


# --- single-name bindings recorded by the call making the value --------------------------------
# `x = _sq_bind(S, v)` and `for x in _sq_for(S, it)` (rewrite.full_entries._FUSE_BINDS) must record exactly
# what the statement form `x = v; _sq_bind(S, x)` records, and change nothing the program sees.

FUSED = """
import itertools
class Falsy:  # truth never asked: bool() raises
    def __bool__(self):
        raise ValueError("no truth")
    def __repr__(self):
        return "Falsy()"
class Countdown:  # a class iterator with a Python __next__
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        return self
    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n
def gen(n):
    for i in range(n):
        got = yield i * 10
        if got:
            i = got
def rec(n):
    acc = []
    for k in range(n):
        acc.append(k)
        sub = rec(k)  # binds after the inner call belong to this frame
        acc.extend(sub)
    return acc
G = None
def main():
    global G
    out = []
    for x in [1, Falsy(), None, 0, ""]:
        out.append(type(x).__name__)
    for y in range(5):
        if y == 3:
            break
    else:
        out.append("no")
    for z in []:
        out.append(z)
    else:
        out.append("empty-else")
    it = iter(range(10))
    for a in it:
        b = next(it)  # the body advances the same iterator
        out.append((a, b))
    for c in Countdown(3):
        c = c * 2  # rebinding inside the body
        out.append(c)
    for d in gen(3):
        out.append(d)
    g = gen(4)
    for e in g:
        if e == 10:
            g.send(3)
        out.append(e)
    for G in "ab":
        out.append(G)
    s = "abc"
    for s in s:
        out.append(s)
    for f in itertools.count():
        if f > 2:
            break
        for f2 in range(f):
            out.append((f, f2))
    ann: int = len(out)
    fs = [type(v).__name__ for v in [Falsy(), 0]]
    pairs = [(k, v) for k, v in {"p": Falsy(), "q": 0}.items()]
    nested = [(i, j) for i in range(3) for j in range(i) if j]
    st = {w % 2 for w in range(4)}
    dc = {w: w * w for w in range(3) if w}
    gx = list(w + 1 for w in range(3))
    wal = [(lv := v * 3) for v in range(3)]
    n = 0
    while (n := n + 1) < 3:
        out.append(n)
    return out, ann, fs, len(pairs), nested, st, dc, gx, wal, lv, rec(3), G
"""

FUSED_ERRORS = """
class BadIter:
    def __iter__(self):
        return 5
class Raises:
    def __iter__(self):
        raise ValueError("no iter")
class NextRaises:
    def __iter__(self):
        return self
    def __next__(self):
        raise KeyError("from __next__")
def gen(n):
    for i in range(n):
        if i == 2:
            raise KeyError(i)
        yield i
def stops():
    yield 1
    raise StopIteration  # PEP 479: RuntimeError
def mutated():
    d = {1: 2}
    for k in d:
        d[k + 1] = 0
def f_int():
    for x in 5:
        pass
def f_comp():
    return [y * 2
            for y in 7]
def f_inner_comp():
    return [k for j in [1] for k in j]
def f_bad():
    for z in BadIter():
        pass
def f_raises():
    out = {w: 1 for w in Raises()}
def f_next():
    for n in NextRaises():
        pass
def f_gen():
    t = 0
    for v in gen(5):
        t += v
    return t
def f_gen_comp():
    return [v for v in gen(5)]
def f_stops():
    return [s for s in stops()]
def f_mutated():
    mutated()
def f_body():
    for q in range(3):
        q = 1 / (q - 2)
def f_none():
    for r in None:
        pass
def main(which):
    return globals()[which]()
"""


def _shown(v):
    """A recorded class as the recording shows it (squall keeps classes by name, not the class);
    other values as they are."""
    if isinstance(v, type):
        return f"<class '{v.__qualname__}'>"
    if type(v).__name__ == "ObjectSnapshot":
        return repr(v)
    return v


def _addrless(v):
    """repr(v) without addresses or recorded identities (`Item#12`: two runs number objects
    apart), and with run()'s numbered module names made one."""
    return re.sub(r"#\d+", "#", re.sub(r"fm_\d+", "fm", re.sub(r" at 0x[0-9a-fA-F]+", "", repr(v))))


def _fused_vs_statement(tmp_path, monkeypatch, src, *a):
    got = {}
    for fuse in (False, True):
        monkeypatch.setattr(rewrite.full_entries, "_FUSE_BINDS", fuse)
        res, ent, lines = run(tmp_path, src, "main", *a)  # also: same outcome as plain Python
        # every entry, every field; values by their repr; the module's own ids left out
        norm = [
            {
                k: (_addrless(_engine.live().deref(v)) if k.endswith("_ref") and v is not None else v)
                for k, v in e.items()
                if k not in ("fn_ns", "form_id", "obj_id")
            }
            for e in ent
        ]
        got[fuse] = (res, ent, norm)
    assert _addrless(got[True][0]) == _addrless(got[False][0])
    assert got[True][2] == got[False][2]
    return got[True]


def test_fused_binds_record_what_the_statements_did(tmp_path, monkeypatch):
    res, ent, _ = _fused_vs_statement(tmp_path, monkeypatch, FUSED)
    assert res[0] == "ok"
    b = binds(ent)
    assert [v for s, v in b if s == "y"] == [0, 1, 2, 3]
    assert [v for s, v in b if s == "a"] == [0, 2, 4, 6, 8]
    assert [v for s, v in b if s == "c"] == [2, 4, 1, 2, 0, 0]
    assert [v for s, v in b if s == "e"] == [0, 10, 30]
    assert [v for s, v in b if s == "G"] == ["a", "b"] and ("ann", res[1][1]) in b
    assert [v for s, v in b if s == "j"] == [0, 0, 1]
    assert [v for s, v in b if s == "lv"] == [0, 3, 6]


BINDS_OF_ONE_STATEMENT = """
def main():
    a, b, c, d, e, f = 1, [2], 3.5, "s", 2**70, None
    g, h, i = e, b, -7
    return a
"""


def test_one_statement_binds_every_kind_of_value_in_order(tmp_path):
    # The scalar run of one statement's bindings is written in one pass; a container in the
    # middle sends it and the rest one by one: the entries are the same either way.
    res, ent, _ = run(tmp_path, BINDS_OF_ONE_STATEMENT)
    assert res == ("ok", 1)
    assert binds(ent) == [
        ("a", 1), ("b", [2]), ("c", 3.5), ("d", "s"), ("e", 2**70), ("f", None),
        ("g", 2**70), ("h", [2]), ("i", -7),
    ]  # fmt: skip
    sites = [e["coord"] for e in ent if e["type"] == "bind"]
    assert len(set(sites)) == len(sites)


@pytest.mark.parametrize("room", [1, 3, 6])
def test_trace_limit_inside_one_statements_binds_stops_at_the_limit(tmp_path, room):
    _, whole, _ = run(tmp_path, BINDS_OF_ONE_STATEMENT)
    first_bind = next(i for i, e in enumerate(whole) if e["type"] == "bind")
    whole_binds = binds(whole)  # its refs name this recording, which the next run clears
    limit = first_bind + room
    squall.api.set_limits(thread_trace_limit=limit)
    try:
        res, ent, _ = run(tmp_path, BINDS_OF_ONE_STATEMENT)
    finally:
        squall.api.set_limits(thread_trace_limit=None)
    assert res == ("ok", 1) and len(ent) == limit
    assert binds(ent) == whole_binds[:room]


def test_fused_binds_statement_shapes():
    src = textwrap.dedent("""
    def f(xs):
        t = 0
        u: int = 1
        for x in xs:
            t += x
        for a, b in xs:
            pass
        w = v = 2
        return [y for y in xs], [p for p, q in xs], (z := 3)
    """)
    text_ = rewrite.instrumented_source_text(src, "s.py", "s", mode="full")
    # the real engine's entry points are bound per site (constants shown as _sq_bind_12(v))
    assert "_sq_bind(" not in text_ and "_sq_expr(" not in text_ and "_sq_call(" not in text_
    assert "t = _sq_bind_" in text_ and "u: int = _sq_bind_" in text_
    if rewrite._LOOP_ITER:
        assert "for x in _sq_for(" in text_ and "for y in _sq_for(" in text_
    else:  # 3.12+: see rewrite._LOOP_ITER
        assert "_sq_for(" not in text_
    assert "_sq_bind_" in text_.split("t += x")[1].splitlines()[1]  # augmented: statement kept
    assert "if _sq_binds_" in text_  # a tuple target in a comprehension: binds returns True
    loop = re.search(r"for \(?a, b\)? in .*\n(.*)", text_)  # 3.9's unparse writes `for (a, b) in`
    assert loop and "_sq_binds_" in loop.group(1)  # one call for a and b
    assert "or True" not in text_ and "_sq_bind_" in text_.split("(z := 3)")[0].splitlines()[-1]


MULTI = """
import contextlib
class P:
    def __init__(self):
        self.v = [1.5, 2]
def pairs():
    yield 1, ("s", 2.5)
    yield None, (P(), [3])
@contextlib.contextmanager
def cm():
    yield (7, 8.25)
def main():
    out = []
    a, b = 1, 2.5
    c, (d, e), *f = [P(), ("x", None), 3, 4]
    for k, (s, w) in pairs():
        out.append((k, type(s).__name__))
    with cm() as (g, h):
        pass
    import os, sys as system
    comp = [m + n for m, n in [(1, 2), (3, 4)] if m]
    gen = list(q * r for q, r in zip(range(3), range(3)))
    return out, a, b, d, e, f, g, h, comp, gen, os.sep, system.maxsize > 0
"""
MULTI_MATCH = """
def main():
    match (1, 2.5):
        case (x1, y1):
            pass
    return x1, y1
"""


def test_multi_binds_record_what_a_bind_per_name_did(tmp_path, monkeypatch):
    # `_sq_binds(S, a, b)` and a `_sq_bind` per name record the same entries, every field.
    got = {}
    for multi in (False, True):
        monkeypatch.setattr(rewrite.full_entries, "_MULTI_BINDS", multi)
        res, ent, _ = run(tmp_path, MULTI, "main")  # also: same outcome as plain Python
        norm = [
            {
                k: (_addrless(_engine.live().deref(v)) if k.endswith("_ref") and v is not None else v)
                for k, v in e.items()
                if k not in ("fn_ns", "form_id", "obj_id")
            }
            for e in ent
        ]
        got[multi] = (res, norm)
    assert _addrless(got[True][0]) == _addrless(got[False][0])
    assert got[True][1] == got[False][1]
    b = binds(ent)
    assert [v for s, v in b if s in ("a", "b")] == [1, 2.5]
    loop = [(s, v) for s, v in b if s in ("k", "s", "w")]
    assert [s for s, _ in loop] == ["k", "s", "w"] * 2 and [v for _, v in loop][:3] == [1, "s", 2.5]
    assert loop[3][1] is None and loop[5][1] == [3]
    assert [v for s, v in b if s in ("g", "h")] == [7, 8.25]
    assert [v for s, v in b if s in ("m", "n")] == [1, 2, 3, 4]
    if sys.version_info >= (3, 10):  # a match statement's names
        _, match_ent, _ = run(tmp_path, MULTI_MATCH, "main")
        assert binds(match_ent) == [("x1", 1), ("y1", 2.5)]


@pytest.mark.parametrize(
    "which",
    [
        "f_int",
        "f_comp",
        "f_inner_comp",
        "f_bad",
        "f_raises",
        "f_next",
        "f_gen",
        "f_gen_comp",
        "f_stops",
        "f_mutated",
        "f_body",
        "f_none",
    ],
)
def test_fused_binds_errors_and_tracebacks_unchanged(tmp_path, monkeypatch, which):
    # Type, message and formatted traceback (carets included) are compared with plain Python in
    # run(); the recordings with the statement form.
    res, _, _ = _fused_vs_statement(tmp_path, monkeypatch, FUSED_ERRORS, which)
    assert res[0] == "exc", res


def test_deep_generator_recursion_unchanged(tmp_path, monkeypatch):
    # 3.12+ runs `for` over a generator without C recursion: no wrapper may add any there.
    src = """
    def walk(n):
        if n:
            for x in walk(n - 1):
                yield x
        else:
            yield 0
    def main():
        try:
            return list(walk(900))
        except RecursionError:
            return "RecursionError"
    """
    res, _, _ = _fused_vs_statement(tmp_path, monkeypatch, textwrap.dedent(src))
    assert res == ("ok", [0])


def test_fused_binds_with_an_explicit_engine(monkeypatch):
    # FakeEngine has no loop_iter and its bind returns None: the real engine's iterator records
    # through its bind, and `x = _sq_bind(...)` still gets the value.
    sys.path.insert(0, os.path.dirname(__file__))
    from _fake_engine import FakeEngine

    seen = {}
    for fuse in (False, True):
        monkeypatch.setattr(rewrite.full_entries, "_FUSE_BINDS", fuse)
        eng = FakeEngine()
        ns = {"__name__": "fm_fused_explicit"}
        exec(rewrite.compile_instrumented(textwrap.dedent(FUSED), "<fm_fused>", "fm_fused", eng, mode="full"), ns)
        out = ns["main"]()
        events, values = list(eng.events), list(eng.values)  # repr() of Falsy records more
        seen[fuse] = (_addrless(out), _addrless(values), eng.sites, _addrless(events))
    assert seen[True] == seen[False]


def test_loop_iter_is_transparent():
    it = _engine.loop_iter(0, [1, 2])
    assert iter(it) is it
    with pytest.raises(TypeError) as e:
        _engine.loop_iter(0, 5)
    assert str(e.value) == "'int' object is not iterable"
    raised = []

    def hook(site, v):
        if v == 2:
            raise LookupError("hook")
        raised.append((site, v))

    it = _engine.loop_iter(7, [1, 2, 3], hook)
    assert next(it) == 1 and raised == [(7, 1)]
    with pytest.raises(LookupError):
        next(it)
    assert list(_engine.loop_iter(7, iter(()), hook)) == []
    assert list(type(it).__new__(type(it))) == []  # a bare instance is exhausted, never crashes


# --- config ------------------------------------------------------------------------------------


def test_mode_overrides_longest_prefix_wins():
    cfg = config.load(cli={"mode": "full", "mode_overrides": "heavy=calls,heavy.light=full"}, env={})
    assert cfg.mode_for("app") == "full"
    assert cfg.mode_for("heavy") == "calls" and cfg.mode_for("heavy.x") == "calls"
    assert cfg.mode_for("heavy.light.y") == "full" and cfg.mode_for("heavyweight") == "full"
    env = config.load(env={"SQUALL_MODE_OVERRIDES": "a.b=calls"}, cli={})
    assert env.mode_for("a.b.c") == "calls" and env.sources["mode_overrides"].startswith("environment")
    with pytest.raises(config.ConfigError):
        config.load(cli={"mode_overrides": {"x": "fast"}}, env={})
    with pytest.raises(config.ConfigError):
        config.load(cli={"mode_overrides": "nothing"}, env={})


def test_mode_overrides_in_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.squall]\nmode_overrides = {"heavy.pkg" = "calls"}\n')
    cfg = config.load(cwd=str(tmp_path), env={})
    assert cfg.mode_for("heavy.pkg.m") == "calls" and cfg.mode_for("other") == "full"


# The real engine is called through one constant callable per form or site (shown as
# `_sq_expr_12(v)`, rewrite.bound._BOUND_ENTRIES); the plain form `_sq_expr(12, v)` must record exactly
# the same.
BOUND = """
def g(a, b=2, *rest, **kw):
    return a + b + len(rest) + len(kw)
def h():
    pass
def boom(x):
    if x > 1:
        raise ValueError(x)
    return x
def main():
    t = 0
    for i in range(4):
        if i % 2:
            t += g(i, 3, 4, k=5)
        else:
            t = t + g(i)
    h()
    f = lambda y, z=1: y * z
    try:
        boom(f(3))
    except ValueError as e:
        t += e.args[0]
    d = {}
    d["k"] = t
    d["k"] += 1
    del d["k"]
    o = type("O", (), {})()
    o.a = o.b = t
    o.a += 1
    setattr(o, "c", 2)
    del o.a
    return t, [boom(j) for j in (0, 1)]
"""


@pytest.mark.parametrize("mode", ["full", "calls"])
def test_bound_entry_points_record_what_the_plain_ones_record(tmp_path, monkeypatch, mode):
    got = {}
    for bound in (False, True):
        if not bound:
            monkeypatch.setattr(rewrite.bound, "_BOUND_ENTRIES", ())
        else:
            monkeypatch.undo()
        text_ = rewrite.instrumented_source_text(textwrap.dedent(BOUND), "b.py", "b", mode=mode)
        assert ("_sq_call_" in text_) == bound and ("_sq_call(" in text_) != bound
        res, ent, _ = run(tmp_path, BOUND, "main", mode=mode)
        norm = [
            {
                k: (_addrless(_engine.live().deref(v)) if k.endswith("_ref") and v is not None else v)
                for k, v in e.items()
                if k not in ("fn_ns", "form_id", "obj_id")
            }
            for e in ent
        ]
        got[bound] = (res, norm)
    assert got[True] == got[False]
    assert got[True][0] == ("ok", (23, [0, 1]))
    assert {"fn-call", "fn-return", "fn-unwind"} <= {e["type"] for e in got[True][1]}
    if mode == "full":
        assert sum(e["type"] == "write" for e in got[True][1]) == 8


def test_bound_entry():
    with pytest.raises(ValueError):
        _engine.bound_entry("unwind", 0)
    v = object()
    assert _engine.bound_entry("expr", 0)(v) is v and _engine.bound_entry("bind", 0)(v) is v
    assert _engine.bound_entry("ret", 0)(v) is v and _engine.bound_entry("call", 0)(1, 2) is None
    d: dict = {}
    assert _engine.bound_entry("witem", 0)(v, d, "k") is v and d == {"k": v}
    assert _engine.bound_entry("wdelitem", 0)(d, "k") is None and d == {}
    with pytest.raises(TypeError):
        _engine.bound_entry("witem", 0)(v, d)


def test_bound_entry_points_leave_every_namespace_alone(tmp_path):
    # They are constants of the code: builtins stay as they were, so NameError keeps its
    # "Did you mean" hint (CPython drops it past 750 builtins, which one name per site reached).
    script = tmp_path / "names.py"
    script.write_text(
        textwrap.dedent("""
        import builtins, sys
        from squall._instrument import rewrite
        exec(rewrite.compile_instrumented("x = 1\\n", "first.py", "first"), {})
        before = set(dir(builtins))  # with the prologue's fixed `_sq_*` entry points
        src = "def f(n):\\n    t = n + 1\\n    return prnt(t)\\n" + "".join(
            "def g%d(x):\\n    return x * %d + 1\\n" % (i, i) for i in range(400))
        ns = {"__name__": "nsm"}
        exec(rewrite.compile_instrumented(src, "nsm.py", "nsm", mode="full"), ns)
        assert set(dir(builtins)) == before, sorted(set(dir(builtins)) - before)[:5]
        assert ns["g7"](2) == 15
        ns["f"](1)
    """)
    )
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(squall.__file__)))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert "AssertionError" not in out.stderr, out.stderr
    assert "NameError: name 'prnt' is not defined" in out.stderr, out.stderr
    if sys.version_info >= (3, 10):
        assert "Did you mean: 'print'?" in out.stderr, out.stderr


def test_code_holding_bound_entry_points_pickles_by_value(tmp_path):
    # cloudpickle pickles a function's code with its constants (attrs'
    # test_3rd_party.py::TestCloudpickleCompat::test_repr failed when they could not be).
    import pickle

    src = "def f(n):\n    t = n * 2\n    return t + 1\n"
    ns = {"__name__": "pk"}
    exec(rewrite.compile_instrumented(src, str(tmp_path / "pk.py"), "pk", mode="full"), ns)
    bound = [k for k in ns["f"].__code__.co_consts if callable(k)]
    assert bound, ns["f"].__code__.co_consts
    for k in bound:
        again = pickle.loads(pickle.dumps(k))
        assert again.__name__ == k.__name__ and again.__self__ == k.__self__
    # a site-bound `ret`/`expr` returns its value; the unbound `unwind` is the engine's own
    v = object()
    ret = next(k for k in bound if isinstance(k.__self__, rewrite.BoundSite) and k.__name__ == "ret")
    assert pickle.loads(pickle.dumps(ret))(v) is v
    assert any(k is _engine.unwind for k in bound), bound
    assert ns["f"](3) == 7


BOUND_VS_UNBOUND = """
import asyncio
class Obj:
    def __init__(self):
        self.n = 1
def inner():
    got = yield 1
    got2 = yield got
    return got2
def outer():
    r = yield from inner()
    x = yield r
    for _ in range(4):
        x = yield x
async def agen():
    for i in range(2):
        sent = yield i
        await asyncio.sleep(0)
async def drive():
    out = []
    g = agen()
    out.append(await g.__anext__())
    out.append(await g.asend("s"))
    return out
def main():
    g = outer()
    seen = [next(g)]
    for v in (None, 3, "txt", 2.5, Obj(), [1, 2]):
        try:
            seen.append(type(g.send(v)).__name__)
        except StopIteration:
            break
    a, b = seen[0], seen[-1]
    return seen, a, b, asyncio.run(drive())
"""


def test_bound_entry_points_record_what_the_unbound_ones_do(tmp_path):
    # Code rewritten for the real engine calls entry points bound to their form or site
    # (`_sq_resume_F(sent)`, `_sq_suspend_S(v)`, `_sq_binds_S(a, b)`); the same engine passed
    # explicitly gets the unbound ones (`_sq_resume(F, sent)`): the entries must be the same,
    # every field (sends of simple values take the engine's fast path, the others its full one).
    src = textwrap.dedent(BOUND_VS_UNBOUND)
    got = {}
    for explicit in (False, True):
        _n[0] += 1
        path = tmp_path / f"fm_{_n[0]}.py"
        path.write_text(src, encoding="utf-8")
        mod = types.ModuleType(f"fm_{_n[0]}")
        sys.modules[mod.__name__] = mod
        code = rewrite.compile_instrumented(src, str(path), mod.__name__, _engine if explicit else None, mode="full")
        text_ = rewrite.instrumented_source_text(src, str(path), mod.__name__, _engine if explicit else None, "full")
        assert ("_sq_resume(" in text_) == explicit and ("_sq_suspend(" in text_) == explicit
        was = _engine.is_recording()
        squall.api.clear_recordings()
        squall.api.start_recording(install_hook=False)
        try:
            exec(code, mod.__dict__)
            res = mod.main()
        finally:
            if not was:
                squall.api.stop_recording()
        tid = _tid()
        ent = [
            _engine.live().entry(_engine.current_flow(), tid, i)
            for i in range(_engine.live().timeline_len(_engine.current_flow(), tid))
        ]
        norm = [
            {
                k: (_addrless(_engine.live().deref(v)) if k.endswith("_ref") and v is not None else v)
                for k, v in e.items()
                if k not in ("fn_ns", "form_id", "obj_id", "fn_name")
            }
            for e in ent
            if e.get("fn_ns", mod.__name__) == mod.__name__ or e["type"] not in ("fn-call",)
        ]
        got[explicit] = (res, norm, sum(1 for e in ent if e.get("resumed")))
        sent = [_shown(_engine.live().deref(e["fn_args_ref"])[0]) for e in ent if e["type"] == "fn-resume"]
        # what each resumption received: fast path (simple values) and full path alike
        assert sent.count(None) >= 2 and {"s", 3, "txt", 2.5} <= set(v for v in sent if not isinstance(v, list))
        assert [1, 2] in sent and any("Obj" in repr(v) for v in sent)
    assert got[False][0] == got[True][0]
    assert got[False][2] >= 8  # resumptions were recorded
    assert got[False][1] == got[True][1]
