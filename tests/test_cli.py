"""The ``squall`` command, run as a subprocess and compared against plain ``python``.

Each test runs the same program under ``python`` and under ``squall run`` and compares what the
program shows: stdout, stderr (with ``--no-summary``), exit code, and what it sees of how it was
started (``sys.argv``, ``__name__``, ``__file__``, ``sys.path[0]``, ``__spec__``, pickling).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = Path(__file__).resolve().parent / "cli_programs"
INVOICES = ROOT / "examples" / "invoices"
PYTHON = sys.executable
SQUALL_SCRIPT = Path(sys.executable).parent / "squall"


def _squall_cmd() -> list[str]:
    if SQUALL_SCRIPT.exists():
        return [str(SQUALL_SCRIPT)]
    return [PYTHON, "-m", "squall"]  # not installed yet: the package from the source tree


def _env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if not SQUALL_SCRIPT.exists():
        env["PYTHONPATH"] = str(ROOT / "python")
    env["PYTHONHASHSEED"] = "0"
    env.pop("PYTHONSTARTUP", None)
    return env


def needs_engine(test):
    """Marks tests that record; the engine is part of the install, so they never skip."""
    return test


def run(cmd: list[str], cwd: Path | str = PROGRAMS, timeout: float = 60) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, cwd=str(cwd), env=_env(), capture_output=True, text=True, timeout=timeout)
    # squall's own warnings (e.g. a piece not built yet) are not the program's output
    r.stderr = "".join(line for line in r.stderr.splitlines(keepends=True) if not line.startswith("squall: warning: "))
    return r


def python(*args: str, cwd: Path | str = PROGRAMS) -> subprocess.CompletedProcess:
    return run([PYTHON, *args], cwd=cwd)


def squall(*args: str, cwd: Path | str = PROGRAMS) -> subprocess.CompletedProcess:
    return run([*_squall_cmd(), *args], cwd=cwd)


def squall_run(*args: str, cwd: Path | str = PROGRAMS, summary: bool = False):
    opts = [] if summary else ["--no-summary"]
    return squall("run", *opts, *args, cwd=cwd)


def _same(py: subprocess.CompletedProcess, sq: subprocess.CompletedProcess, stderr=True):
    assert sq.returncode == py.returncode, (sq.returncode, py.returncode, sq.stderr)
    assert sq.stdout == py.stdout
    if stderr:
        assert sq.stderr == py.stderr


# --- the program sees what python would show it ----------------------------------------------


def test_version():
    r = squall("--version")
    assert r.returncode == 0
    assert r.stdout.startswith("squall ")


def test_help_without_command_exits_2():
    r = squall()
    assert r.returncode == 2
    assert "run" in r.stderr


def test_script_environment_identical():
    py = python("show_env.py", "a", "--b", "-i")
    sq = squall_run("show_env.py", "a", "--b", "-i")
    _same(py, sq)
    assert "argv ['show_env.py', 'a', '--b', '-i']" in sq.stdout
    assert "name __main__" in sq.stdout
    assert "main is me True" in sq.stdout
    assert "pickle Point(x=1, y=2) 3" in sq.stdout


def test_script_environment_identical_from_another_dir():
    py = python("tests/cli_programs/show_env.py", "x", cwd=ROOT)
    sq = squall_run("tests/cli_programs/show_env.py", "x", cwd=ROOT)
    _same(py, sq)
    assert f"path0 {PROGRAMS}" in sq.stdout


def test_script_environment_absolute_path(tmp_path):
    script = str(PROGRAMS / "show_env.py")
    _same(python(script, cwd=tmp_path), squall_run(script, cwd=tmp_path))


def test_squall_options_before_script_are_not_passed_to_program():
    sq = squall("run", "--no-summary", "--skip", "nothing.here", "--mode", "full", "show_env.py", "--skip", "z")
    assert sq.returncode == 0, sq.stderr
    assert "argv ['show_env.py', '--skip', 'z']" in sq.stdout


def test_module_environment_identical():
    py = python("-m", "pkgdemo.tool", "5")
    sq = squall_run("-m", "pkgdemo.tool", "5")
    _same(py, sq)
    assert f"tool argv ['{PROGRAMS / 'pkgdemo' / 'tool.py'}', '5']" in sq.stdout
    assert "double 10" in sq.stdout


def test_module_package_main():
    py = python("-m", "pkgdemo", "p", "-q")
    sq = squall_run("-m", "pkgdemo", "p", "-q")
    _same(py, sq)
    assert "spec pkgdemo.__main__" in sq.stdout


def test_module_show_env():
    _same(python("-m", "show_env", "z"), squall_run("-m", "show_env", "z"))


def test_missing_module_exits_1():
    py = python("-m", "no.such.module")
    sq = squall_run("-m", "no.such.module")
    assert py.returncode == sq.returncode == 1
    assert "No module named 'no'" in sq.stderr
    assert sq.stderr.startswith("squall: ")
    assert sq.stderr.split(": ", 1)[1] == py.stderr.split(": ", 1)[1]
    sq2 = squall_run("-m", "nosuchmod")
    assert sq2.returncode == 1
    assert sq2.stderr == "squall: No module named nosuchmod\n"


# --- exit codes, tracebacks --------------------------------------------------------------------


def test_missing_file_exits_2(tmp_path):
    sq = squall_run("missing.py", cwd=tmp_path)
    py = python("missing.py", cwd=tmp_path)
    assert py.returncode == sq.returncode == 2
    expected = f"squall: can't open file '{tmp_path / 'missing.py'}': [Errno 2] No such file or directory\n"
    assert sq.stderr == expected
    assert py.stderr.endswith(expected[len("squall") :])
    assert sq.stdout == ""


def test_syntax_error_like_python():
    py = python("syntax_error.py")
    sq = squall_run("syntax_error.py")
    _same(py, sq)
    assert sq.returncode == 1
    assert "SyntaxError" in sq.stderr


def test_uncaught_exception_traceback_like_python():
    py = python("raises.py")
    sq = squall_run("raises.py")
    _same(py, sq)
    assert sq.returncode == 1
    assert "squall" not in sq.stderr  # no frame of squall's own
    assert sq.stderr.startswith("Traceback (most recent call last):\n")
    assert "ValueError: invalid literal for int() with base 10: 'oops'" in sq.stderr


def test_chained_exception_like_python():
    _same(python("chained.py"), squall_run("chained.py"))


def test_sys_exit_code():
    py = python("exit3.py")
    sq = squall_run("exit3.py")
    _same(py, sq)
    assert sq.returncode == 3


def test_sys_exit_message():
    py = python("exit_msg.py")
    sq = squall_run("exit_msg.py")
    _same(py, sq)
    assert sq.returncode == 1
    assert sq.stderr == "fatal: something went wrong\n"


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt", reason="POSIX signals")
def test_keyboard_interrupt_like_python():
    py = python("interrupt.py")
    sq = squall_run("interrupt.py")
    _same(py, sq)
    assert sq.returncode == -signal.SIGINT


def test_non_daemon_threads_finish_before_exit():
    py = python("threads.py")
    sq = squall_run("threads.py")
    _same(py, sq)
    assert "worker done" in sq.stdout


@needs_engine
def test_summary_goes_to_stderr_only():
    py = python("exit3.py")
    sq = squall_run("exit3.py", summary=True)
    assert sq.returncode == 3
    assert sq.stdout == py.stdout
    assert "recording summary" in sq.stderr


def test_quiet_has_no_summary():
    sq = squall("run", "-q", "exit3.py")
    assert sq.returncode == 3
    assert "recording summary" not in sq.stderr


# --- the bundled example --------------------------------------------------------------------


def test_invoices_stdout_identical():
    py = python(str(INVOICES / "main.py"), cwd=ROOT)
    sq = squall_run(str(INVOICES / "main.py"), cwd=ROOT)
    _same(py, sq)
    assert py.returncode == 0
    assert "TOTAL" in py.stdout and "REJECTED INV-005" in py.stdout


@needs_engine
def test_invoices_summary():
    sq = squall_run("examples/invoices/main.py", cwd=ROOT, summary=True)
    assert sq.returncode == 0, sq.stderr
    assert sq.stdout == python("examples/invoices/main.py", cwd=ROOT).stdout
    err = sq.stderr
    assert "recording summary" in err
    assert "recording saved to " in err  # says where the recording is
    assert "most called functions" in err
    # the most-called functions, with counts
    top = err.split("most called functions", 1)[1]
    assert "billing.pricing.tier_discount" in top
    assert "billing.models.LineItem.subtotal" in top or "billing.pricing.price_item" in top
    # the exception of the example: InvoiceError raised by validate, caught by the worker
    assert "InvoiceError" in err
    assert "billing.processing.validate" in err
    exc_line = next(line for line in err.splitlines() if "InvoiceError" in line)
    assert "caught" in exc_line and "NOT caught" not in exc_line
    assert "invoice-worker" in err


@needs_engine
def test_summary_reports_uncaught_exception():
    sq = squall_run("raises.py", summary=True)
    assert sq.returncode == 1
    err = sq.stderr
    assert err.index("Traceback") < err.index("recording summary")
    lines = [line for line in err.split("recording summary", 1)[1].splitlines() if "ValueError" in line]
    assert any("NOT caught" in line for line in lines), err
    assert any("caught" in line and "NOT caught" not in line for line in lines), err


@needs_engine
def test_interactive_console_queries_recording():
    script = (
        "print('flows', sorted(indexes.all_flows()))\n"
        "stats = indexes.fn_call_stats(0)\n"
        "print('top', stats[0]['fn_ns'] + '.' + stats[0]['fn_name'], stats[0]['cnt'])\n"
        "print('main globals', 'make_invoices' in dir())\n"
    )
    r = subprocess.run(
        [*_squall_cmd(), "run", "-i", "--no-summary", "examples/invoices/main.py"],
        cwd=str(ROOT),
        env=_env(),
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "TOTAL" in r.stdout, r.stderr
    assert "flows [0]" in r.stdout, r.stdout + r.stderr
    assert "top billing.pricing.tier_discount 22" in r.stdout, r.stdout + r.stderr
    assert "main globals True" in r.stdout


@needs_engine
def test_summary_nothing_recorded_says_so():
    sq = squall_run("exit3.py", summary=True)
    assert sq.returncode == 3
    assert "none recorded" in sq.stderr
    assert "Warning" not in sq.stderr


def test_run_without_script_is_usage_error():
    sq = squall("run")
    assert sq.returncode == 2
    assert "usage" in sq.stderr


def test_repl_runs_code():
    r = subprocess.run(
        [*_squall_cmd(), "repl"],
        cwd=str(PROGRAMS),
        env=_env(),
        input="x = 6 * 7\nprint('answer', x)\nimport sys; print(__name__)\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "answer 42" in r.stdout
    assert "__main__" in r.stdout


def test_safe_path_adds_no_entry():
    code = "import sys; print(sys.path[0])"
    env = _env()
    env["PYTHONSAFEPATH"] = "1"
    (PROGRAMS / "_path0.py").write_text(code + "\n")
    try:
        py = subprocess.run([PYTHON, "_path0.py"], cwd=str(PROGRAMS), env=env, capture_output=True, text=True)
        sq = subprocess.run(
            [*_squall_cmd(), "run", "-q", "_path0.py"], cwd=str(PROGRAMS), env=env, capture_output=True, text=True
        )
    finally:
        (PROGRAMS / "_path0.py").unlink()
    assert py.returncode == sq.returncode == 0
    if SQUALL_SCRIPT.exists():
        assert sq.stdout == py.stdout


@needs_engine
def test_summary_thread_exception_not_caught_and_caught():
    py = python("thread_fails.py")
    sq = squall_run("thread_fails.py", summary=True)
    assert sq.returncode == py.returncode == 0
    assert sq.stdout == py.stdout
    assert py.stderr in sq.stderr  # the thread's traceback, as python prints it
    lines = [ln for ln in sq.stderr.split("recording summary", 1)[1].splitlines() if "RuntimeError" in ln]
    assert len(lines) == 2, sq.stderr
    assert any("caught in __main__.guarded" in ln for ln in lines)
    assert any("NOT caught" in ln and "failing-worker" not in ln for ln in lines)
    assert "failing-worker" in sq.stderr


@needs_engine
def test_summary_lists_skipped_user_modules():
    sq = squall_run("--skip", "billing.pricing", "examples/invoices/main.py", cwd=ROOT, summary=True)
    assert sq.returncode == 0
    assert sq.stdout == python("examples/invoices/main.py", cwd=ROOT).stdout
    skipped = sq.stderr.split("NOT instrumented", 1)[1]
    assert "billing.pricing" in skipped
    top = sq.stderr.split("most called functions", 1)[1].split("exceptions", 1)[0]
    assert "billing.pricing" not in top
    assert "billing.models" in top


def test_bad_skip_regex_is_a_usage_error():
    sq = squall_run("--skip-regex", "(", "exit3.py")
    assert sq.returncode == 2
    assert sq.stderr.startswith("squall")
    assert sq.stdout == ""


def test_limit_flags_are_applied_and_reported(tmp_path):
    script = tmp_path / "many.py"
    script.write_text("def f(i):\n    return i\nfor i in range(50):\n    f(i)\nprint('done')\n")
    sq = squall("run", "--fn-call-limit", "5", str(script), cwd=tmp_path)
    assert sq.returncode == 0 and sq.stdout == "done\n"
    assert sq.stderr.count("`__main__.f` was called more than 5 times") == 1
    assert "LIMITS HIT" in sq.stderr and "__main__.f  5" in sq.stderr
    bad = squall("run", "--thread-trace-limit", "0", str(script), cwd=tmp_path)
    assert bad.returncode == 2 and "expected a positive integer, got `0`" in bad.stderr
