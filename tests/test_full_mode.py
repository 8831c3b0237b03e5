"""Full mode: every sub-expression and local binding is recorded, and behaviour never changes.

Each test runs a program plainly and rewritten (full mode, real engine), compares the outcomes
(value, or exception type/message/formatted traceback), then checks the recorded expr/bind
entries of the main thread."""

import os
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
    tids = _engine.all_flows().get(_engine.current_flow(), [])
    nid = threading.get_native_id()
    return nid if nid in tids else threading.get_ident()


def _outcome(fn, a, file):
    try:
        return ("ok", fn(*a))
    except BaseException as e:  # noqa: BLE001
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        lines = [ln for ln in tb.splitlines() if 'File "<' not in ln]
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
    entries = [_engine.entry(_engine.current_flow(), tid, i)
               for i in range(_engine.timeline_len(_engine.current_flow(), tid))]
    return got, entries, src.splitlines()


def text(lines, coord):
    l0, c0, l1, c1 = coord
    if l0 == l1:
        return lines[l0 - 1][c0:c1]
    return "\n".join([lines[l0 - 1][c0:]] + lines[l0:l1 - 1] + [lines[l1 - 1][:c1]])


def exprs(entries, lines):
    return [(text(lines, e["coord"]), _engine.deref(e["result_ref"])) for e in entries if e["type"] == "expr"]


def binds(entries):
    return [(e["symbol"], _engine.deref(e["value_ref"])) for e in entries if e["type"] == "bind"]


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
    got = {b["symbol"]: _engine.deref(b["value_ref"]) for b in indexes.bindings(0, _tid(), last)}
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
    assert hit is not None and _engine.deref(hit["result_ref"]) == 4


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
    assert list(_engine.deref(call["fn_args_ref"])) == [4]


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
    # Each implicit await (`__anext__()`, `__aenter__()`, `__aexit__()`) ends a segment of co's
    # frame at the statement (suspend: the awaitable's type) and the next segment starts with
    # the awaited result (the item, the bound value, the suppress flag; the exception's type when
    # the await raised: StopAsyncIteration ends a loop).
    res, ent, lines = run(tmp_path, ASYNC_IMPLICIT, mode=mode)
    assert res == ("ok", [0, 1, "res", 0])
    co_form = next(e["form_id"] for e in ent if e.get("fn_name") == "co")
    segs = []
    for e in ent:
        if e["type"] == "fn-return" and _engine.entry(0, _tid(), e["fn_call_idx"])["form_id"] == co_form:
            segs.append(("suspend", text(lines, e["coord"]), _engine.deref(e["result_ref"])))
        elif e["type"] == "fn-resume" and e["form_id"] == co_form:
            segs.append(("resume", _engine.deref(e["fn_args_ref"])[0]))
    asend, coro = _asend_type(), _coroutine_type()
    assert segs == [
        ("suspend", "async for x in agen(2)", asend), ("resume", 0),
        ("suspend", "async for x in agen(2)", asend), ("resume", 1),
        ("suspend", "async for x in agen(2)", asend), ("resume", StopAsyncIteration),
        ("suspend", "async with CM() as r", coro), ("resume", "res"),
        ("suspend", "async with CM() as r", coro), ("resume", True),
        ("suspend", "y in agen(1)", asend), ("resume", 0),
        ("suspend", "y in agen(1)", asend), ("resume", StopAsyncIteration),
        ("suspend", "return out", [0, 1, "res", 0]),
    ]
    if mode == "full":  # bindings and the iterable are still recorded
        b = binds(ent)
        assert ("x", 0) in b and ("x", 1) in b and ("r", "res") in b and ("y", 0) in b
        assert any(t == "agen(2)" and type(v).__name__ == "async_generator" for t, v in exprs(ent, lines))
    else:
        assert binds(ent) == [] and exprs(ent, lines) == []


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
    exec(rewrite.compile_instrumented(textwrap.dedent(ASYNC_IMPLICIT), "<fm_explicit>",
                                      "fm_explicit", eng, mode=mode), ns)
    assert ns["main"]() == [0, 1, "res", 0]
    co = [(k, v) for k, f, v in ((e[0], e[1], e[2]) for e in eng.events
                                 if e[0] in ("suspend", "resume")) if f == "co"]
    asend, coro = _asend_type(), _coroutine_type()
    assert co == [
        ("suspend", asend), ("resume", 0), ("suspend", asend), ("resume", 1),
        ("suspend", asend), ("resume", StopAsyncIteration),
        ("suspend", coro), ("resume", "res"), ("suspend", coro), ("resume", True),
        ("suspend", asend), ("resume", 0), ("suspend", asend), ("resume", StopAsyncIteration),
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
