"""Instrumented code is cached across runs (keyed by source hash, squall and Python versions,
mode); a cached entry is used only where the engine gives the same form/site ids."""

import os
import subprocess
import sys
import textwrap


def run(tmp_path, cache, order="ab"):
    (tmp_path / "moda.py").write_text("def fa(x):\n    y = x + 1\n    return y\n")
    (tmp_path / "modb.py").write_text("def fb(x):\n    return [x] * 2\n")
    script = tmp_path / "prog.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys, threading
        sys.path.insert(0, {str(tmp_path)!r})
        import squall
        squall.api.start_recording()
        mods = {{}}
        for name in {list("mod" + c for c in order)!r}:
            mods[name] = __import__(name)
        r = (mods["moda"].fa(1), mods["modb"].fb(2))
        from squall._instrument import cache
        tl = squall.indexes.get_referenced_maps_timeline(0, threading.get_native_id())
        calls = [(e["fn_name"], squall.values.deref_val_id(e["fn_args_ref"])) for e in tl if e["type"] == "fn-call"]
        binds = [e["symbol"] for e in tl if e["type"] == "bind"]
        print(r, calls, binds, cache.stats["hits"], cache.stats["misses"])
    """)
    )
    env = dict(os.environ, SQUALL_CACHE_DIR=str(cache))
    p = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_second_run_uses_the_cache_and_records_the_same(tmp_path):
    cache = tmp_path / "cache"
    first = run(tmp_path, cache)
    second = run(tmp_path, cache)
    assert first.endswith(" 0 2"), first  # two misses, stored
    assert second.endswith(" 2 0"), second  # two hits
    assert first[: -len(" 0 2")] == second[: -len(" 2 0")]
    assert "('fa', [1])" in first and "'y'" in first
    assert any(cache.rglob("*.bin"))


def test_another_import_order_does_not_reuse_mismatched_ids(tmp_path):
    cache = tmp_path / "cache"
    run(tmp_path, cache, order="ab")
    swapped = run(tmp_path, cache, order="ba")
    assert "('fa', [1])" in swapped and "('fb', [2])" in swapped
    assert swapped.endswith(" 0 2"), swapped  # the ids differ: rewritten, not reused


def test_a_changed_source_is_not_served_from_the_cache(tmp_path):
    cache = tmp_path / "cache"
    run(tmp_path, cache)
    (tmp_path / "moda.py").write_text("def fa(x):\n    z = x + 2\n    return z\n")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, threading
            sys.path.insert(0, {str(tmp_path)!r})
            import squall
            squall.api.start_recording()
            import moda
            print(moda.fa(1), [e["symbol"] for e in squall.indexes.get_referenced_maps_timeline(0, threading.get_native_id()) if e["type"] == "bind"])
        """),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, SQUALL_CACHE_DIR=str(cache)),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3 ['z']"


def test_a_change_to_any_file_of_the_rewriter_changes_the_cache_key(tmp_path):
    """The rewriter is a package of passes: editing any one of them (not only its ``__init__``)
    must invalidate cached code rewritten by the old passes."""
    import shutil

    from squall._instrument import cache, rewrite

    copy = tmp_path / "rewrite"
    shutil.copytree(os.path.dirname(rewrite.__file__), copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = cache._sources_digest(str(copy))
    assert before == cache._sources_digest(str(copy))
    assert cache._instrumenter_fingerprint() == before
    full = copy / "full_stmts.py"
    full.write_text(full.read_text() + "\n# changed\n")
    assert cache._sources_digest(str(copy)) != before
