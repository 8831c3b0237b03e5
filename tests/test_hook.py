"""The import hook: user modules are rewritten on import, nothing lands in __pycache__,
site-packages are skipped, failures fall back to unrecorded code with a message."""

import importlib
import os
import sys
import textwrap
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import squall  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from _fake_engine import FakeEngine  # noqa: E402
from squall import config  # noqa: E402
from squall._instrument import hook, rewrite  # noqa: E402


def write(path, text):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), "w") as f:
        f.write(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A temp project on sys.path; yields (root, unique package name, engine); cleans up."""
    name = "sqpkg_" + uuid.uuid4().hex[:8]
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    eng = FakeEngine()
    yield tmp_path, name, eng
    hook.uninstall()
    for m in set(sys.modules) - before:
        if m.startswith(("sqpkg_", "sqsp_")):
            del sys.modules[m]
    importlib.invalidate_caches()


def make_pkg(root, name):
    write(
        root / name / "__init__.py",
        '''
        """pkg doc"""
        from . import util
        def top(x):
            return util.double(x) + 1
    ''',
    )
    write(
        root / name / "util.py",
        """
        def double(x):
            return x * 2
        def boom():
            raise KeyError("boom")
    """,
    )


def test_import_records_and_writes_no_pyc(env):
    root, name, eng = env
    make_pkg(root, name)
    cfg = config.load(cwd=str(root), env={})
    hook.install(cfg, engine=eng)
    assert hook.is_installed() and isinstance(sys.meta_path[0], hook.SquallFinder)
    mod = importlib.import_module(name)
    assert mod.top(5) == 11 and mod.__doc__ == "pkg doc"
    assert eng.events == [
        ("call", "top", (5,)),
        ("call", "double", (5,)),
        ("ret", "double", 10),
        ("ret", "top", 11),
    ]
    assert {f["fn_ns"] for f in eng.forms} == {name, name + ".util"}
    assert eng.form("double")["file"] == str(root / name / "util.py")
    assert isinstance(mod.__loader__, hook.InstrumentingLoader)
    with pytest.raises(KeyError) as ei:
        mod.util.boom()
    assert ei.traceback[-1].lineno + 1 == 5  # pytest lines are 0-based: the raise on line 5
    assert eng.events[-1] == ("unwind", "boom", "KeyError")
    assert not os.path.exists(root / name / "__pycache__")
    assert config.explain(name).instrumented
    assert str(config.explain(name + ".util")).startswith("`%s.util` is instrumented" % name)
    hook.uninstall()
    assert not hook.is_installed()


def test_site_packages_like_path_is_skipped(env):
    root, name, eng = env
    sp = root / "venv" / "lib" / "site-packages"
    spname = "sqsp_" + name[6:]
    write(sp / spname / "__init__.py", "def f():\n    return 1\n")
    sys.path.insert(0, str(sp))
    try:
        hook.install(config.load(cwd=str(root), env={}), engine=eng)
        mod = importlib.import_module(spname)
        assert mod.f() == 1 and eng.events == []
        e = config.explain(spname)
        assert not e.instrumented and e.category == "site-packages"
        assert "add `--include %s`" % spname in str(e)
    finally:
        sys.path.remove(str(sp))


def test_include_records_a_site_packages_module(env):
    root, name, eng = env
    sp = root / "venv" / "lib" / "site-packages"
    spname = "sqsp_" + name[6:] + "i"
    write(sp / spname / "__init__.py", "def f():\n    return 1\n")
    sys.path.insert(0, str(sp))
    try:
        hook.install(config.load(cwd=str(root), env={"SQUALL_INCLUDE": spname}), engine=eng)
        assert importlib.import_module(spname).f() == 1
        assert eng.events == [("call", "f", ()), ("ret", "f", 1)]
    finally:
        sys.path.remove(str(sp))


def test_skipped_user_modules_listed(env):
    root, name, eng = env
    make_pkg(root, name)
    hook.install(config.load(cwd=str(root), env={}, cli={"skip": [name + ".util"]}), engine=eng)
    mod = importlib.import_module(name)
    assert mod.top(1) == 3
    assert [e[1] for e in eng.events] == ["top", "top"]
    skipped = {e.module: e for e in config.skipped_user_modules()}
    assert name + ".util" in skipped and name not in skipped
    assert "skip prefix `%s.util` (from command line --skip)" % name in skipped[name + ".util"].reason


def test_rewrite_failure_falls_back_with_one_message(env, monkeypatch, capsys):
    root, name, eng = env
    make_pkg(root, name)

    def broken(*a, **k):
        raise RuntimeError("rewriter bug")

    monkeypatch.setattr(rewrite, "instrument_tree", broken)
    hook.install(config.load(cwd=str(root), env={}), engine=eng)
    mod = importlib.import_module(name)
    assert mod.top(2) == 5 and eng.events == []
    err = capsys.readouterr().err
    assert "squall: could not instrument %s (RuntimeError: rewriter bug); it runs unrecorded" % name in err
    assert err.count("could not instrument %s " % name) == 1
    e = config.explain(name)
    assert not e.instrumented and "failed" in e.reason
    assert not os.path.exists(root / name / "__pycache__")


def test_user_syntax_error_propagates(env):
    root, name, eng = env
    write(root / name / "__init__.py", "def f(:\n    pass\n")
    hook.install(config.load(cwd=str(root), env={}), engine=eng)
    with pytest.raises(SyntaxError) as ei:
        importlib.import_module(name)
    assert ei.value.filename == str(root / name / "__init__.py") and ei.value.lineno == 1


def test_compile_main_and_run_main(env, monkeypatch):
    root, name, eng = env
    script = write(
        root / "script.py",
        """
        import sys
        def main(argv):
            return len(argv)
        RESULT = main(sys.argv)
    """,
    )
    with open(script) as f:
        src = f.read()
    code = hook.compile_main(src, script, config.load(script_path=script, env={}), engine=eng)
    ns = {"__name__": "__main__"}
    exec(code, ns)
    assert eng.form("main")["fn_ns"] == "__main__" and eng.events[0][0] == "call"
    eng2 = FakeEngine()
    code = hook.compile_main(
        src, script, config.load(script_path=script, env={}, cli={"skip": ["__main__"]}), engine=eng2
    )
    exec(code, {"__name__": "__main__"})
    assert eng2.forms == [] and eng2.events == []
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    eng3 = FakeEngine()
    g = hook.run_main(script, ["a", "b"], config.load(script_path=script, env={}), engine=eng3)
    assert g["RESULT"] == 3 and ("ret", "main", 3) in eng3.events


def test_install_twice_keeps_one_finder(env):
    root, name, eng = env
    hook.install(config.load(cwd=str(root), env={}), engine=eng)
    hook.install(config.load(cwd=str(root), env={}), engine=eng)
    assert sum(isinstance(f, hook.SquallFinder) for f in sys.meta_path) == 1


def test_end_to_end_with_the_real_engine(env):
    """No fake: the hook rewrites against squall._engine and the timeline has the calls."""
    import threading

    from squall import _engine

    root, name, _ = env
    make_pkg(root, name)
    # calls mode: the entry indexes below are calls-only (full mode is tested in test_full_mode)
    hook.install(config.load(cwd=str(root), env={}, cli={"mode": "calls"}))
    mod = importlib.import_module(name)
    was = _engine.is_recording()
    _engine.clear_recordings()
    _engine.start_recording()
    try:
        assert mod.top(4) == 9
        with pytest.raises(KeyError):
            mod.util.boom()
    finally:
        if not was:
            _engine.stop_recording()
    fid = _engine.current_flow()
    # the engine keys threads by native id (older builds: by ident); take ours
    tids = _engine.live().all_flows()[fid]
    tid = threading.get_native_id() if threading.get_native_id() in tids else threading.get_ident()
    entries = [_engine.live().entry(fid, tid, i) for i in range(_engine.live().timeline_len(fid, tid))]
    mine = [(e["type"], e.get("fn_name")) for e in entries]
    assert mine[:4] == [("fn-call", "top"), ("fn-call", "double"), ("fn-return", None), ("fn-return", None)]
    assert ("fn-call", "boom") in mine and mine[-1][0] == "fn-unwind"
    assert entries[1]["parent_idx"] == 0 and entries[0]["ret_idx"] == 3
    call = entries[0]
    assert call["fn_ns"] == name
    assert not os.path.exists(root / name / "__pycache__")
