"""The seed's FlowStorm gotchas, each gone in squall (DESIGN.md lists how).

1. "Must call start-recording after connecting": `squall run` records from the first line, and a
   query says plainly when nothing is being recorded (test_engine.py).
2. "Must reload the namespace after instrumenting": modules imported after start_recording() are
   recorded with no reload (tests/seed/walkthrough.py); explain() names modules that ran before.
3. "Use vals/deref-val-id": values deref in the same process (test_engine.py, the seed test).
4. "REPL can block if the UI is closed": there is no UI yet; recording never waits on anything.
5. "user namespace won't record": `__main__`, scripts and REPL input are recorded.
6. "Skipped namespaces won't record even after reload": skipped modules are explained.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SQUALL = str(Path(sys.executable).parent / "squall")


def run(args, tmp_path, stdin=None):
    env = dict(os.environ)
    env.pop("SQUALL_INCLUDE", None)
    env.pop("SQUALL_SKIP", None)
    env.pop("SQUALL_SKIP_REGEX", None)
    return subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, input=stdin, env=env, timeout=60)


def test_1_squall_run_records_from_the_first_line(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        textwrap.dedent("""
        import threading
        from squall import indexes, values

        def double(x):
            return 2 * x

        double(21)
        tl = indexes.get_referenced_maps_timeline(0, threading.get_native_id())
        call = next(e for e in tl if e["type"] == "fn-call" and e["fn_name"] == "double")
        print(call["fn_ns"], values.deref_val_id(call["fn_args_ref"]), values.deref_val_id(tl[call["ret_idx"]]["result_ref"]))
    """)
    )
    p = run([SQUALL, "run", "--no-summary", str(script)], tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (0, "__main__ [21] 42\n", "")


def test_2_modules_that_ran_before_the_hook_are_named_for_reload(tmp_path):
    (tmp_path / "early.py").write_text("def f():\n    return 1\n")
    script = tmp_path / "prog.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import early
        import squall
        squall.api.start_recording()
        import late
        print(squall.config.explain("early"))
        print(squall.config.explain("late").instrumented)
    """)
    )
    (tmp_path / "late.py").write_text("def g():\n    return 2\n")
    p = run([sys.executable, str(script), str(tmp_path)], tmp_path)
    assert p.returncode == 0, p.stderr
    first, second = p.stdout.splitlines()
    assert "`early` is not instrumented: it was imported before squall's import hook was installed" in first
    assert "reload it" in first
    assert second == "True"


def test_5_functions_typed_at_the_repl_are_recorded(tmp_path):
    session = textwrap.dedent("""
        def greet(name):
            return "hi " + name

        greet("ana")
        import threading
        from squall import indexes
        [(e["fn_ns"], e["fn_name"]) for e in indexes.get_referenced_maps_timeline(0, threading.get_native_id()) if e["type"] == "fn-call"]
    """)
    p = run([SQUALL, "repl"], tmp_path, stdin=session)
    assert p.returncode == 0, p.stderr
    assert "'hi ana'" in p.stdout
    assert "[('__main__', 'greet')]" in p.stdout


def test_6_skipped_modules_say_why(tmp_path):
    (tmp_path / "vendored.py").write_text("def v():\n    return 1\n")
    script = tmp_path / "prog.py"
    script.write_text("import vendored\nimport squall\nvendored.v()\nprint(squall.config.explain('vendored'))\n")
    p = run([SQUALL, "run", "--skip", "vendored", str(script)], tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("`vendored` is not instrumented:")
    assert "skip" in p.stdout
    assert "vendored" in p.stderr.split("NOT instrumented", 1)[1]
