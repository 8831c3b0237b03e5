"""`pytest --squall`: each test recorded as its own flow into its own file; failing tests keep
theirs and their report says where it went wrong. Driven with pytester (pytest's own fixture for
testing plugins), in a subprocess so the recorder's global state stays out of this session."""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SQUALL = str(Path(sys.executable).parent / "squall")


def _plugin_args():
    eps = importlib.metadata.entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    if any(ep.value == "squall.pytest_plugin" for ep in group):
        return []  # installed: loaded through its entry point
    return ["-p", "squall.pytest_plugin"]  # an older install of this checkout: load it by name


@pytest.fixture
def project(pytester):
    pytester.makeini("[pytest]\npythonpath = .\n")
    pkg = pytester.mkpydir("calc")
    (pkg / "ops.py").write_text(
        "def divide(a, b):\n"
        "    q = a / b\n"
        "    return q\n\n\n"
        "def ratios(pairs):\n"
        "    out = []\n"
        "    for a, b in pairs:\n"
        "        out.append(divide(a, b))\n"
        "    return out\n\n\n"
        "def total(xs):\n"
        "    return sum(xs) + 1\n"
    )
    pytester.makepyfile(
        test_calc=(
            "from calc.ops import ratios, total\n\n"
            "def test_passes():\n"
            "    assert ratios([(4, 2)]) == [2.0]\n\n"
            "def test_raises_inside():\n"
            "    assert ratios([(1, 2), (3, 0)]) == [0.5, 0]\n\n"
            "def test_wrong_result():\n"
            "    assert total([1, 2]) == 3\n"
        )
    )
    return pytester


def run(pytester, *args):
    return pytester.runpytest_subprocess(*_plugin_args(), *args)


def recordings(pytester):
    d = pytester.path / ".squall" / "tests"
    return sorted(p.name for p in d.glob("*.sqrec")) if d.exists() else []


def test_failing_tests_keep_their_recording_and_say_where(project):
    result = run(project, "--squall")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*- squall recording -*",
            "recording: .squall/tests/test_calc.py__test_raises_inside.sqrec (flow 1)",
            "where it went wrong (innermost first, thread MainThread):",
            "  calc.ops.divide(a=3, b=0) raised ZeroDivisionError: division by zero   [[]ops.py*, idx *]",
            "  calc.ops.ratios(pairs=[[](1, 2), (3, 0)[]]) raised ZeroDivisionError: division by zero   [[]ops.py:*, idx 0]",
            "  in test_raises_inside",
            "explore: squall query .squall/tests/test_calc.py__test_raises_inside.sqrec call 0",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "recording: .squall/tests/test_calc.py__test_wrong_result.sqrec (flow 2)",
            "no recorded call raised the failure: test_wrong_result itself failed on what these calls returned:",
            "  calc.ops.total(xs=[[]1, 2[]]) -> 4   [[]idx 0]",
        ]
    )
    assert "test_passes.sqrec" not in out
    assert recordings(project) == ["test_calc.py__test_raises_inside.sqrec", "test_calc.py__test_wrong_result.sqrec"]
    # The kept file is a recording of that test alone, as its own flow.
    rec = project.path / ".squall" / "tests" / "test_calc.py__test_raises_inside.sqrec"
    q = subprocess.run([SQUALL, "query", str(rec), "exceptions", "--json"], capture_output=True, text=True, timeout=60)
    assert q.returncode == 0, q.stderr
    exc = json.loads(q.stdout)["exceptions"]
    assert [(e["flow_id"], e["fn"], e["exception"], e["caught"]) for e in exc] == [
        (1, "calc.ops.divide", "ZeroDivisionError: division by zero", False)
    ]
    assert exc[0]["unwound"] == ["calc.ops.divide", "calc.ops.ratios"]


def test_keep_all(project):
    run(project, "--squall", "--squall-keep=all").assert_outcomes(passed=1, failed=2)
    assert recordings(project) == [
        "test_calc.py__test_passes.sqrec",
        "test_calc.py__test_raises_inside.sqrec",
        "test_calc.py__test_wrong_result.sqrec",
    ]


def test_keep_none(project):
    result = run(project, "--squall", "--squall-keep=none")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        ["*(flow 1)  (not kept: --squall-keep=none)", "  calc.ops.divide(a=3, b=0) raised ZeroDivisionError*"]
    )
    assert recordings(project) == []


def test_squall_dir(project, tmp_path):
    target = tmp_path / "recs"
    run(project, "--squall", f"--squall-dir={target}").assert_outcomes(passed=1, failed=2)
    assert sorted(p.name for p in target.glob("*.sqrec")) == [
        "test_calc.py__test_raises_inside.sqrec",
        "test_calc.py__test_wrong_result.sqrec",
    ]


def test_without_the_flag_nothing_is_recorded(project):
    result = run(project)
    result.assert_outcomes(passed=1, failed=2)
    assert "squall recording" not in result.stdout.str()
    assert recordings(project) == []


def test_squall_run_m_pytest_passes_where_plain_pytest_passes_with_warnings_as_errors(tmp_path):
    """`squall run -m pytest` on a project whose pytest.ini says `filterwarnings = error`: squall
    (which provides a pytest plugin, so pytest marks it for assertion rewriting) is imported before
    pytest starts; pytest warned that it could not rewrite it, and the warning, an error there,
    stopped pytest at startup."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error\n")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text(
        "from calc import add\n\n"
        "def test_add():\n"
        "    assert add(1, 2) == 3\n\n"
        "def test_fails():\n"
        "    assert add(1, 1) == 3\n"
    )
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]

    def outcome(cmd):
        r = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr
        return r.returncode, last.split(" in ")[0]

    plain = outcome([sys.executable, *args])
    recorded = outcome([SQUALL, "run", "--no-summary", "-o", str(tmp_path / "t.sqrec"), *args])
    assert plain == (1, "1 failed, 1 passed")
    assert recorded == plain


@pytest.fixture
def bank(pytester):
    pytester.makeini("[pytest]\npythonpath = .\n")
    pkg = pytester.mkpydir("bank")
    (pkg / "account.py").write_text(
        "class Account:\n"
        "    def __init__(self):\n"
        "        self.balance = 0\n\n"
        "    def deposit(self, amount):\n"
        "        self.balance += amount\n\n\n"
        "def run():\n"
        "    acct = Account()\n"
        "    acct.deposit(5)\n"
        "    acct.deposit(7)\n"
        "    return acct.balance\n"
    )
    pytester.makepyfile(test_bank="from bank.account import run\n\ndef test_run():\n    assert run() == 12\n")
    return pytester


def _deposits(pytester):
    rec = pytester.path / ".squall" / "tests" / "test_bank.py__test_run.sqrec"
    q = subprocess.run([SQUALL, "query", str(rec), "calls", "deposit"], capture_output=True, text=True, timeout=60)
    assert q.returncode == 0, q.stderr
    return [ln for ln in q.stdout.splitlines() if "deposit(self=" in ln]


def test_object_depth_0_records_known_arguments_as_references(bank):
    run(bank, "--squall", "--squall-keep=all", "--squall-object-depth=0").assert_outcomes(passed=1)
    first, second = _deposits(bank)
    # `acct` was recorded when bound: each `self` is its earlier state with the writes since.
    assert "self=(earlier) Account#" in first and "balance=0" in first, first
    assert "self=(earlier) Account#" in second and "balance=5" in second, second


def test_object_depth_defaults_to_reading_arguments_afresh(bank):
    run(bank, "--squall", "--squall-keep=all").assert_outcomes(passed=1)
    first, second = _deposits(bank)
    assert "self=Account#" in first and "balance=0" in first, first
    assert "self=Account#" in second and "balance=5" in second, second


def test_a_negative_object_depth_is_a_usage_error(bank):
    result = run(bank, "--squall", "--squall-object-depth=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--squall-object-depth: expected an integer 0 or more, got `-1`*"])
