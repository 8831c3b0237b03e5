"""Instrumentation scope: prefixes, precedence, default scope, explanations, errors."""

import json
import os
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import squall  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from squall import config  # noqa: E402
from squall.config import ConfigError, load  # noqa: E402

NOENV = {}


def write(path, text):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), "w") as f:
        f.write(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def proj(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        """
        [tool.squall]
        include = ["app", "lib.core"]
        skip = ["app.vendor"]
        skip_regex = "_test$"
        mode = "calls"
    """,
    )
    write(tmp_path / "app" / "__init__.py", "")
    return tmp_path


def test_prefix_matching_on_dotted_boundaries():
    m = config._prefix_match
    assert m("app", ["app"]) == "app"
    assert m("app.x.y", ["app"]) == "app"
    assert m("apple", ["app"]) is None
    assert m("lib.core.z", ["lib.core"]) == "lib.core"
    assert m("lib.corex", ["lib.core"]) is None
    assert m("lib", ["lib.core"]) is None


def test_defaults_without_pyproject(tmp_path):
    cfg = load(cwd=str(tmp_path), env=NOENV)
    assert (cfg.include, cfg.skip, cfg.skip_regex, cfg.mode) == ([], [], None, "full")
    assert set(cfg.sources.values()) == {"default"}


def test_pyproject_found_upward_from_script(proj):
    script = write(proj / "app" / "deep" / "run.py", "")
    cfg = load(script_path=script, env=NOENV)
    assert cfg.include == ["app", "lib.core"] and cfg.skip == ["app.vendor"]
    assert cfg.skip_regex == "_test$" and cfg.mode == "calls"
    assert cfg.pyproject == str(proj / "pyproject.toml")
    assert cfg.sources["include"] == "pyproject (%s)" % (proj / "pyproject.toml")


def test_precedence_pyproject_env_cli(proj):
    env = {"SQUALL_SKIP": "x, y", "SQUALL_MODE": "full", "SQUALL_INCLUDE": ""}
    cfg = load(cwd=str(proj), env=env)
    assert cfg.skip == ["x", "y"] and cfg.sources["skip"] == "environment SQUALL_SKIP"
    assert cfg.mode == "full" and cfg.include == ["app", "lib.core"]
    cfg = load(cwd=str(proj), env=env, cli={"skip": ["z"], "include": "q,r", "mode": None})
    assert cfg.skip == ["z"] and cfg.sources["skip"] == "command line --skip"
    assert cfg.include == ["q", "r"] and cfg.mode == "full"
    assert cfg.sources["mode"] == "environment SQUALL_MODE"
    assert cfg.sources["skip_regex"].startswith("pyproject")


def test_decisions_with_include_skip_regex(proj):
    cfg = load(cwd=str(proj), env=NOENV)
    f = str(proj / "app" / "m.py")
    assert cfg.decide("app.m", f).instrumented
    assert not cfg.decide("app.vendor.x", f).instrumented
    assert cfg.decide("app.vendor.x", f).category == "skip"
    e = cfg.decide("app.m_test", f)
    assert not e.instrumented and "skip_regex `_test$`" in e.reason
    e = cfg.decide("other", str(proj / "other.py"))
    assert not e.instrumented and e.category == "include"
    assert cfg.decide("__main__", str(proj / "run.py")).instrumented
    # include overrides the default scope: an included site-packages module is recorded
    sp = os.path.join(str(proj), "venv", "lib", "site-packages", "lib", "core.py")
    assert cfg.decide("lib.core", sp).instrumented


def test_squall_is_never_instrumented_even_if_included(tmp_path):
    cfg = load(cwd=str(tmp_path), env=NOENV, cli={"include": ["squall", "app"]})
    e = cfg.decide("squall.config", config.__file__)
    assert not e.instrumented and "squall never instruments itself" in str(e)


def test_a_file_anywhere_in_squalls_own_tree_is_squalls(tmp_path):
    """By file, not only by name: code run from squall's own files (say ``runpy`` of one of them
    under another name) is never instrumented, wherever in the package it lives."""
    import squall.api
    import squall.config.paths

    cfg = load(cwd=str(tmp_path), env=NOENV)
    for f in (squall.api.__file__, squall.config.paths.__file__):
        e = cfg.decide("not_squall_by_name", f)
        assert not e.instrumented and "is part of squall" in str(e), (f, str(e))


def test_default_scope(tmp_path):
    cfg = load(cwd=str(tmp_path), env=NOENV)
    e = cfg.decide("json", json.__file__)
    assert not e.instrumented and e.category == "stdlib"
    import pytest as pt

    e = cfg.decide("pytest", pt.__file__)
    assert not e.instrumented and e.category == "site-packages"
    assert "add `--include pytest` or `SQUALL_INCLUDE=pytest` to record it" in str(e)
    e = cfg.decide("sys", None)
    assert not e.instrumented and e.category == "no-source"
    mine = write(tmp_path / "mine" / "mod.py", "x = 1\n")
    e = cfg.decide("mine.mod", mine)
    assert e.instrumented and e.category == "user"
    fake_sp = write(tmp_path / "x" / "dist-packages" / "pkg" / "__init__.py", "")
    assert cfg.decide("pkg", fake_sp).category == "site-packages"
    assert cfg.decide("__main__", mine).instrumented


def test_explain_sentences(tmp_path, monkeypatch):
    cfg = load(cwd=str(tmp_path), env=NOENV)
    import pytest as pt

    s = str(config.explain("pytest", cfg))
    assert s.startswith("`pytest` is not instrumented: its file ")
    assert os.path.realpath(pt.__file__) in s or pt.__file__ in s
    assert "is in site-packages; add `--include pytest` or `SQUALL_INCLUDE=pytest` to record it" in s
    assert str(config.explain("json", cfg)).startswith("`json` is not instrumented: its file")
    assert "standard library" in str(config.explain("json", cfg))
    # a user module imported before the hook: ran unrecorded, needs a reload
    write(tmp_path / "preimp_mod_sq.py", "x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import preimp_mod_sq  # noqa: F401

    e = config.explain("preimp_mod_sq", cfg)
    assert not e.instrumented and e.category == "pre-imported"
    assert "imported before squall's import hook was installed" in str(e)
    assert "reload" in str(e)
    # not imported yet: predicted
    write(tmp_path / "later_pkg_sq" / "__init__.py", "")
    write(tmp_path / "later_pkg_sq" / "sub.py", "")
    e = config.explain("later_pkg_sq.sub", cfg)
    assert e.instrumented and str(e).startswith("`later_pkg_sq.sub` would be instrumented: its file")
    assert "later_pkg_sq" not in sys.modules
    assert "can be found" in str(config.explain("no_such_mod_sq_zz", cfg))


def test_bad_regex_message(tmp_path):
    with pytest.raises(ConfigError) as ei:
        load(cwd=str(tmp_path), env={"SQUALL_SKIP_REGEX": "a(b"})
    msg = str(ei.value)
    assert "'a(b'" in msg and "environment SQUALL_SKIP_REGEX" in msg
    write(tmp_path / "pyproject.toml", '[tool.squall]\nskip_regex = "[oops"\n')
    with pytest.raises(ConfigError) as ei:
        load(cwd=str(tmp_path), env=NOENV)
    assert "'[oops'" in str(ei.value) and str(tmp_path / "pyproject.toml") in str(ei.value)


def test_bad_toml_and_bad_values(tmp_path):
    p = write(tmp_path / "pyproject.toml", "[tool.squall]\ninclude = [app\n")
    with pytest.raises(ConfigError) as ei:
        load(cwd=str(tmp_path), env=NOENV)
    assert p in str(ei.value) and "not valid TOML" in str(ei.value)
    write(tmp_path / "pyproject.toml", "[tool.squall]\ninclude = 3\n")
    with pytest.raises(ConfigError) as ei:
        load(cwd=str(tmp_path), env=NOENV)
    assert "bad include 3" in str(ei.value) and p in str(ei.value)
    write(tmp_path / "pyproject.toml", '[tool.squall]\nmode = "fast"\n')
    with pytest.raises(ConfigError) as ei:
        load(cwd=str(tmp_path), env=NOENV)
    assert "'fast'" in str(ei.value) and p in str(ei.value)
    write(tmp_path / "pyproject.toml", '[tool.squall]\nincluded = ["x"]\n')
    with pytest.raises(ConfigError) as ei:
        load(cwd=str(tmp_path), env=NOENV)
    assert "'included'" in str(ei.value)


def test_current_configure_and_storm_instrumentation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = config._current
    try:
        cfg = config.configure(env=NOENV, skip=["a.b"], include=None)
        assert config.current() is cfg
        d = config.get_storm_instrumentation()
        assert d["skip"] == ["a.b"] and d["sources"]["skip"] == "command line --skip"
        assert d["sources"]["include"] == "default" and d["mode"] == "full"
        assert "hook_installed" in d
        with pytest.raises(ConfigError):
            config.configure(env=NOENV, bogus=1)
    finally:
        config._current = old
