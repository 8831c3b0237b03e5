"""The rewriter: rewritten code behaves exactly like the original and reports the right events."""

import ast
import os
import sys
import textwrap
import traceback

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import squall  # noqa: F401
except ImportError:  # running from a checkout without `maturin develop`
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from _fake_engine import FakeEngine  # noqa: E402
from squall._instrument.rewrite import compile_instrumented, instrument_source  # noqa: E402

FILE = "/tmp/squall_test_mod.py"


def load(src, engine=None, name="m"):
    src = textwrap.dedent(src)
    eng = engine or FakeEngine()
    ns = {"__name__": name}
    exec(compile_instrumented(src, FILE, name, eng), ns)
    return ns, eng


def load_plain(src, name="m"):
    ns = {"__name__": name}
    exec(compile(textwrap.dedent(src), FILE, "exec", dont_inherit=True), ns)
    return ns


def outcome(fn, *a, **k):
    try:
        return ("ok", fn(*a, **k))
    except BaseException as e:  # noqa: BLE001
        tb = [(f.lineno, f.name) for f in traceback.extract_tb(e.__traceback__) if f.filename == FILE]
        return ("exc", type(e).__name__, str(e), tb)


def same(src, entry="main", *a, **k):
    """Runs ``entry`` in the original and in the rewritten module; asserts identical outcomes
    (value or exception type, message and traceback lines); returns (outcome, engine)."""
    plain = outcome(load_plain(src)[entry], *a, **k)
    ns, eng = load(src)
    inst = outcome(ns[entry], *a, **k)
    assert inst == plain
    return inst, eng


def ev(eng, *kinds):
    """Events as (kind, fn_name) pairs, optionally only some kinds."""
    return [(e[0], e[1]) for e in eng.events if not kinds or e[0] in kinds]


# --- basic shape -------------------------------------------------------------------------------


def test_plain_function_events_and_params():
    src = """
    def f(a, b=1, *args, c, **kw):
        return a + b + sum(args) + c + sum(kw.values())
    def main():
        return f(1, 2, 3, c=4, d=5)
    """
    (res, eng) = same(src)
    assert res == ("ok", 15)
    assert eng.events[1] == ("call", "f", (1, 2, (3,), 4, {"d": 5}))
    assert eng.events[2] == ("ret", "f", 15)
    assert eng.form("f")["params"] == ["a", "b", "args", "c", "kw"]
    assert eng.form("f")["kind"] == FakeEngine.FORM_FUNCTION
    assert eng.form("f")["line"] == 2
    assert eng.form("f")["fn_ns"] == "m" and eng.form("f")["file"] == FILE


def test_posonly_params():
    src = """
    def f(a, /, b, *, c):
        return (a, b, c)
    def main():
        return f(1, 2, c=3)
    """
    res, eng = same(src)
    assert res == ("ok", (1, 2, 3))
    assert eng.form("f")["params"] == ["a", "b", "c"]
    assert ("call", "f", (1, 2, 3)) in eng.events


def test_fall_off_end_and_bare_return():
    src = """
    def f(x):
        if x:
            return
        y = 1
    def main():
        return f(0), f(1)
    """
    res, eng = same(src)
    assert res == ("ok", (None, None))
    rets = [e for e in eng.events if e[0] == "ret" and e[1] == "f"]
    assert len(rets) == 2
    # two different sites: the fall-off and the bare return
    src_text = ast.unparse(instrument_source(textwrap.dedent(src), FILE, "m", FakeEngine()))
    assert "return _sq_ret(" in src_text


def test_recursion_events_nest():
    src = """
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    def main():
        return fib(5)
    """
    res, eng = same(src)
    assert res == ("ok", 5)
    calls = [e for e in eng.events if e[0] == "call" and e[1] == "fib"]
    rets = [e for e in eng.events if e[0] == "ret" and e[1] == "fib"]
    assert len(calls) == len(rets) == 15
    depth = 0
    for k, _n in ev(eng):
        depth += 1 if k == "call" else -1
        assert depth >= 0
    assert depth == 0


def test_exceptions_caught_and_uncaught_keep_tracebacks():
    src = """
    def inner(x):
        y = 1
        raise ValueError("bad %s" % x)
    def middle(x):
        try:
            inner(x)
        except ValueError:
            return "caught"
    def outer(x):
        return inner(x) + 1
    def main():
        return middle(1)
    def main2():
        return outer(2)
    """
    res, eng = same(src)
    assert res == ("ok", "caught")
    assert ev(eng) == [
        ("call", "main"),
        ("call", "middle"),
        ("call", "inner"),
        ("unwind", "inner"),
        ("ret", "middle"),
        ("ret", "main"),
    ]
    res, eng = same(src, "main2")
    assert res[0] == "exc" and res[1] == "ValueError"
    assert [ln for ln, _ in res[3]] == [15, 11, 4]
    assert ev(eng)[-3:] == [("unwind", "inner"), ("unwind", "outer"), ("unwind", "main2")]
    assert eng.events[-1][2] == "ValueError"


def test_traceback_lines_in_nested_blocks():
    src = """
    def f(d):
        for k in d:
            with open(__file__ if False else "/dev/null") as fh:
                if k:
                    return d[k]
    def main():
        return f({1: 2, 3: 4, 5: None, 7: 8}) + f({9: None})
    """
    res, _ = same(src)
    assert res[0] == "exc"
    assert [ln for ln, _ in res[3]] == [8]


def test_return_in_try_finally_overridden():
    src = """
    log = []
    def f():
        try:
            return "try"
        finally:
            log.append("fin")
    def g():
        try:
            return "try"
        finally:
            return "finally"
    def main():
        return f(), g(), log
    """
    res, eng = same(src)
    assert res == ("ok", ("try", "finally", ["fin"]))
    assert [e[2] for e in eng.events if e[0] == "ret" and e[1] == "g"] == ["try", "finally"]


def test_methods_classmethod_staticmethod_property_super_class_cell():
    src = """
    class Base:
        def __init__(self, x):
            self.x = x
        def who(self):
            return "base"
    class C(Base):
        \"\"\"class doc\"\"\"
        count = 0
        def __init__(self, x):
            super().__init__(x * 2)
        def who(self):
            return "c+" + super().who()
        @classmethod
        def make(cls, x):
            cls.count += 1
            return cls(x)
        @staticmethod
        def add(a, b):
            return a + b
        @property
        def double(self):
            return self.x * 2
        @double.setter
        def double(self, v):
            self.x = v / 2
        def cls(self):
            return __class__
        def __private(self):
            return "p"
        def call_private(self):
            return self.__private()
    def main():
        c = C.make(3)
        c.double = 10
        return (c.x, c.who(), C.add(1, 2), c.double, c.cls().__name__, C.count,
                c.call_private(), C.__doc__, C.who.__qualname__, C.make.__qualname__)
    """
    res, eng = same(src)
    assert res == ("ok", (5.0, "c+base", 3, 10.0, "C", 1, "p", "class doc", "C.who", "C.make"))
    names = {f["fn_name"] for f in eng.forms}
    assert {
        "Base.__init__",
        "C.__init__",
        "C.make",
        "C.add",
        "C.double",
        "C.cls",
        "C._C__private" if False else "C.__private",
    } <= names
    assert ("call", "C.make") in ev(eng) and ("call", "C.add") in ev(eng)


def test_closures_nonlocal_global_and_qualnames():
    src = """
    counter = 0
    def make():
        n = 0
        def inc(by=1):
            nonlocal n
            global counter
            n += by
            counter += 1
            return n
        return inc
    def outer():
        def g():
            return lambda: 1
        return g
    class K:
        def m(self):
            class Inner:
                def im(self):
                    return 1
            return Inner
    def main():
        inc = make()
        inc(); inc(5)
        lam = outer()()
        return (inc(), counter, inc.__qualname__, outer().__qualname__, lam.__qualname__,
                K().m().im.__qualname__, inc.__closure__ is not None)
    """
    res, eng = same(src)
    assert res == (
        "ok",
        (
            7,
            3,
            "make.<locals>.inc",
            "outer.<locals>.g",
            "outer.<locals>.g.<locals>.<lambda>",
            "K.m.<locals>.Inner.im",
            True,
        ),
    )
    names = {f["fn_name"] for f in eng.forms}
    assert {
        "make.<locals>.inc",
        "outer.<locals>.g",
        "outer.<locals>.g.<locals>.<lambda>",
        "K.m.<locals>.Inner.im",
    } <= names


def test_qualnames_match_cpython_everywhere():
    src = """
    def f():
        a = [lambda: 1 for _ in range(1)][0]
        b = list((lambda: 2) for _ in range(1))[0]
        c = {k: (lambda: 3) for k in range(1)}[0]
        return [a, b, c]
    class C:
        global gf
        def gf(self):
            pass
        k = [lambda: 1 for _ in range(1)][0]
        class D:
            def m(self):
                return lambda: 0
    def main():
        return [fn.__qualname__ for fn in f() + [gf, C.k, C.D.m, C.D().m()]]
    """
    res, eng = same(src)
    names = {f["fn_name"] for f in eng.forms}
    for q in res[1]:
        assert q in names, (q, names)


def test_decorators_functools_wraps():
    src = """
    import functools
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            return ("wrapped", fn(*a, **k))
        return wrapper
    @deco
    def target(x):
        \"\"\"target doc\"\"\"
        return x + 1
    def main():
        return target(1), target.__name__, target.__doc__, target.__wrapped__.__qualname__
    """
    res, eng = same(src)
    assert res == ("ok", (("wrapped", 2), "target", "target doc", "target"))
    assert ev(eng, "call")[-2:] == [("call", "deco.<locals>.wrapper"), ("call", "target")]


def test_lambdas():
    src = """
    add = lambda a, b=2, *r, k=1, **kw: a + b + k
    def main():
        sq = sorted([3, 1, 2], key=lambda v: -v)
        gl = lambda: (yield 1)
        return add(1), sq, list(gl()), add.__name__
    """
    res, eng = same(src)
    assert res == ("ok", (4, [3, 2, 1], [1], "<lambda>"))
    lam = eng.form("<lambda>")
    assert lam["kind"] == FakeEngine.FORM_LAMBDA and lam["params"] == ["a", "b", "r", "k", "kw"]
    assert ("call", "<lambda>", (1, 2, (), 1, {})) in eng.events
    assert ("ret", "<lambda>", 4) in eng.events
    assert ev(eng).count(("call", "main.<locals>.<lambda>")) == 3
    # the generator lambda is left alone
    assert sum(1 for f in eng.forms if f["fn_name"] == "main.<locals>.<lambda>") == 1


def test_generators_next_send_throw_close():
    src = """
    def gen(n):
        total = 0
        for i in range(n):
            got = yield i
            if got:
                total += got
        return total
    def main():
        g = gen(3)
        out = [next(g), g.send(10), g.send(5)]
        try:
            next(g)
        except StopIteration as e:
            out.append(e.value)
        g2 = gen(5)
        next(g2)
        g2.close()
        g3 = gen(5)
        next(g3)
        try:
            g3.throw(KeyError("k"))
        except KeyError:
            out.append("thrown")
        return out
    """
    res, eng = same(src)
    assert res == ("ok", [0, 1, 2, 15, "thrown"])
    assert eng.form("gen")["kind"] == FakeEngine.FORM_GENERATOR
    g = [(e[0], e[2]) for e in eng.events if e[1] == "gen"]
    assert g[:8] == [
        ("call", (3,)),
        ("suspend", 0),
        ("resume", 10),
        ("suspend", 1),
        ("resume", 5),
        ("suspend", 2),
        ("resume", None),
        ("ret", 15),
    ]
    assert g[8:] == [
        ("call", (5,)),
        ("suspend", 0),
        ("unwind", "GeneratorExit"),
        ("call", (5,)),
        ("suspend", 0),
        ("unwind", "KeyError"),
    ]


def test_yield_from_and_bare_yield():
    src = """
    def sub():
        x = yield
        yield x
        return "sub-done"
    def gen():
        r = yield from sub()
        yield r
    def main():
        g = gen()
        return [next(g), g.send("hi"), next(g)]
    """
    res, eng = same(src)
    assert res == ("ok", [None, "hi", "sub-done"])
    gen_events = [(e[0], e[2]) for e in eng.events if e[1] == "gen"]
    assert gen_events[0][0] == "call" and gen_events[1][0] == "suspend"
    assert ("resume", "sub-done") in gen_events


def test_contextmanager():
    src = """
    from contextlib import contextmanager
    log = []
    @contextmanager
    def cm(tag):
        log.append("enter " + tag)
        try:
            yield tag.upper()
        finally:
            log.append("exit " + tag)
    def main():
        with cm("a") as v:
            log.append(v)
        try:
            with cm("b"):
                raise RuntimeError("inside")
        except RuntimeError as e:
            log.append(str(e))
        return log
    """
    res, eng = same(src)
    assert res == ("ok", ["enter a", "A", "exit a", "enter b", "exit b", "inside"])
    cm_ev = [e[0] for e in eng.events if e[1] == "cm"]
    assert cm_ev == ["call", "suspend", "resume", "ret", "call", "suspend", "unwind"]


def test_async_functions_and_comprehension_awaits():
    src = """
    import asyncio
    async def leaf(x):
        await asyncio.sleep(0)
        return x * 2
    async def branch(n):
        vals = [await leaf(i) for i in range(n)]
        more = await asyncio.gather(leaf(10), leaf(20))
        return vals + more
    async def fails():
        await asyncio.sleep(0)
        raise ValueError("async bad")
    def main():
        return asyncio.run(branch(3))
    def main2():
        return asyncio.run(fails())
    """
    res, eng = same(src)
    assert res == ("ok", [0, 2, 4, 20, 40])
    assert eng.form("branch")["kind"] == FakeEngine.FORM_COROUTINE
    b = [e[0] for e in eng.events if e[1] == "branch"]
    assert b[0] == "call" and b[-1] == "ret"
    assert b.count("suspend") == 4 and b.count("resume") == 4
    res, eng = same(src, "main2")
    assert res[1] == "ValueError"
    assert [e[0] for e in eng.events if e[1] == "fails"] == ["call", "suspend", "resume", "unwind"]


def test_async_generators():
    src = """
    import asyncio
    async def agen(n):
        for i in range(n):
            await asyncio.sleep(0)
            yield i
        return
    async def consume():
        out = [v async for v in agen(3)]
        async for v in agen(2):
            out.append(v * 10)
        return out
    def main():
        return asyncio.run(consume())
    """
    res, eng = same(src)
    assert res == ("ok", [0, 1, 2, 0, 10])
    assert eng.form("agen")["kind"] == FakeEngine.FORM_ASYNC_GENERATOR
    a = [e[0] for e in eng.events if e[1] == "agen"]
    assert a[0] == "call" and "ret" in a


def test_docstrings_and_future_annotations_untouched():
    src = '''
    """module doc"""
    from __future__ import annotations
    import typing
    def f(x: SomeUndefined[int], *a: "Q", k: Other = 1) -> Nope:
        """f doc"""
        y: Undefined = x
        return y
    class C:
        z: AlsoUndefined
        def m(self) -> C:
            """m doc"""
    def main():
        return (__doc__, f.__doc__, f.__annotations__, C.m.__doc__, C.__annotations__,
                f(1), C().m(), f.__code__.co_flags & 0x1000000 != 0 or True)
    '''
    res, eng = same(src)
    assert res[0] == "ok"
    doc, fdoc, ann, mdoc, cann, v, mv, _ = res[1]
    assert doc == "module doc" and fdoc == "f doc" and mdoc == "m doc"
    assert ann == {"x": "SomeUndefined[int]", "a": "'Q'", "k": "Other", "return": "Nope"}
    assert cann == {"z": "AlsoUndefined"} and v == 1 and mv is None
    tree = instrument_source(textwrap.dedent(src), FILE, "m", FakeEngine())
    assert isinstance(tree.body[0], ast.Expr)  # docstring first
    assert isinstance(tree.body[1], ast.ImportFrom) and tree.body[1].module == "__future__"


def test_annotations_without_future_and_lambda_in_annotation():
    src = """
    def f(x: (lambda: int)() = 3) -> "r":
        return x
    def main():
        return f(), f.__annotations__["return"]
    """
    res, eng = same(src)
    assert res == ("ok", (3, "r"))
    assert not any(f["fn_name"] == "<lambda>" for f in eng.forms)


def test_generator_with_return_in_class_and_nested_def_not_rewritten_twice():
    src = """
    def outer():
        def inner():
            return 1
        return inner() + 1
    def main():
        return outer()
    """
    res, eng = same(src)
    assert res == ("ok", 2)
    text = ast.unparse(instrument_source(textwrap.dedent(src), FILE, "m", FakeEngine()))
    assert "_sq_ret(" in text and "_sq_ret(_sq_ret" not in text
    assert text.count("_sq_call(") == 3


def test_sites_have_locations():
    src = "def f(x):\n    if x:\n        return x + 1\n    y = yield x\n"
    eng = FakeEngine()
    instrument_source(src, FILE, "m", eng)
    by_line = {s["line"]: s for s in eng.sites if s["kind"] < FakeEngine.SITE_EXPR}
    assert by_line[3]["col"] == 8 and by_line[3]["end_col"] == 20
    assert by_line[3]["kind"] == FakeEngine.SITE_RETURN
    assert by_line[4]["kind"] == FakeEngine.SITE_YIELD and by_line[4]["col"] == 8


def test_syntax_error_like_compile():
    bad = "def f(:\n    pass\n"
    with pytest.raises(SyntaxError) as a:
        compile(bad, "bad.py", "exec")
    with pytest.raises(SyntaxError) as b:
        instrument_source(bad, "bad.py", "m", FakeEngine())
    assert (a.value.lineno, a.value.offset, a.value.msg, a.value.filename) == (
        b.value.lineno,
        b.value.offset,
        b.value.msg,
        b.value.filename,
    )


def test_class_body_names_and_match_statement():
    src = """
    class P:
        def area(self, shape):
            match shape:
                case ("sq", s):
                    return s * s
                case _:
                    return 0
    def main():
        return P().area(("sq", 3)), P().area(1)
    """
    if sys.version_info < (3, 10):
        src = (
            src.replace("match shape:", "if True:")
            .replace('case ("sq", s):', "if shape != 1:\n                    s = shape[1]")
            .replace("case _:", "else:")
        )
    res, eng = same(src)
    assert res == ("ok", (9, 0))


def test_prologue_imports_real_engine_names_by_default():
    tree = instrument_source("'''d'''\nfrom __future__ import annotations\nx = 1\n", FILE, "m", FakeEngine())
    text = ast.unparse(tree)
    assert "_entry_points" in text
    # with no explicit engine, the prologue imports squall._engine under single-underscore names
    from squall._instrument import rewrite

    node = rewrite._prologue(rewrite._Ctx(FakeEngine(), FILE, "m"), False, tree.body[0])
    # ... as builtins: no name is added to the module's namespace
    assert ast.unparse(node) == ("__import__('squall._instrument.rewrite', fromlist=['_'])._install_builtins()")


def test_module_namespace_is_unchanged_with_the_real_engine():
    from squall._instrument import rewrite

    src = "import os\ndef f(x):\n    y = x + 1\n    return y\n"
    ns = {"__name__": "m"}
    exec(rewrite.compile_instrumented(src, FILE, "m"), ns)
    plain = {"__name__": "m"}
    exec(compile(src, FILE, "exec"), plain)
    assert sorted(ns) == sorted(plain) and ns["f"](1) == 2


def test_walrus_and_comprehension_scopes_keep_working():
    src = """
    def f(data):
        if (n := len(data)) > 2:
            return [y for x in data if (y := x * 2) > 2], y, n
        return n
    def main():
        return f([1, 2, 3]), f([1])
    """
    res, eng = same(src)
    assert res == ("ok", (([4, 6], 6, 3), 1))


def test_repl_compiler_instruments_inputs():
    from squall._instrument.repl import InstrumentedCompiler

    eng = FakeEngine()
    comp = InstrumentedCompiler("__main__", engine=eng)
    ns = {"__name__": "__main__"}
    assert comp("def f(x):", "<console>", "single") is None  # incomplete
    code = comp("def f(x):\n    return x * 3\n", "<console>", "single")
    exec(code, ns)
    exec(comp("r = f(4)", "<console>", "single"), ns)
    assert ns["r"] == 12
    assert ("call", "f", (4,)) in eng.events and ("ret", "f", 12) in eng.events
    assert eng.form("f")["fn_ns"] == "__main__"


def test_instrumented_console_records_functions_typed_at_the_prompt(capsys):
    from squall._instrument.repl import InstrumentedConsole

    eng = FakeEngine()
    ns = {"__name__": "__main__"}
    con = InstrumentedConsole(ns, engine=eng)
    for line in ["def sq(x):", "    return x * x", "", "sq(7)", "1/0"]:
        con.push(line)
    out = capsys.readouterr()
    assert "49" in out.out and "ZeroDivisionError" in out.err
    assert eng.events == [("call", "sq", (7,)), ("ret", "sq", 49)]
    assert eng.form("sq")["fn_ns"] == "__main__" and eng.form("sq")["file"] == "<console>"


def test_threads_metaclass_init_subclass_and_recursion_limit():
    src = """
    import sys, threading
    class Meta(type):
        def __new__(mcls, name, bases, ns):
            ns["tag"] = name.lower()
            return super().__new__(mcls, name, bases, ns)
    class Base(metaclass=Meta):
        subs = []
        def __init_subclass__(cls, **kw):
            super().__init_subclass__(**kw)
            Base.subs.append(cls.__name__)
    class Sub(Base):
        pass
    def work(out, i):
        out[i] = i * i
    def deep(n):
        return 0 if n == 0 else 1 + deep(n - 1)
    def main():
        out = {}
        ts = [threading.Thread(target=work, args=(out, i)) for i in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        try:
            deep(sys.getrecursionlimit() + 10)
        except RecursionError:
            rec = "recursion"
        return sorted(out.items()), Sub.tag, Base.subs, rec, deep(50)
    """
    res, eng = same(src)
    assert res == ("ok", ([(0, 0), (1, 1), (2, 4), (3, 9)], "sub", ["Sub"], "recursion", 50))
    assert ev(eng).count(("call", "work")) == 4
    assert ("call", "Base.__init_subclass__") in ev(eng)
