#!/usr/bin/env bash
# Runs squall's test suite on several CPython versions (pyenv).
#
#   scripts/test_pythons.sh [VERSION ...]      # default: 3.9 3.11 3.13
#
# For each version: creates (or reuses) .venv-<ver> with that pyenv Python, installs squall
# there with `pip install .[mcp]` (builds the Rust engine; the mcp extra needs 3.10+, so on 3.9
# the MCP tests skip) plus pytest, then runs pytest on tests/ (from the checkout root; `import
# squall` is the installed package).
# Prints a summary line per version (the log, with skip/xfail reasons: target/pytest-<ver>.log)
# and exits non-zero if any version failed. Extra pytest args: PYTEST_ARGS="-x -k foo". Tests
# marked `main_python_only` (what the Python version does not change: pyproject.toml) run in
# scripts/test.sh only; SQUALL_ALL_TESTS=1 runs them here too.
#
# Every version is installed first, one at a time (a build uses every core), then the suites
# run SQUALL_TEST_JOBS at a time (default 1): a suite keeps about one core busy (its programs
# under test wait on each other), so CI runs two at once on two cores. These builds are for
# testing what each Python's engine does, not its speed: without LTO and with parallel codegen
# (release optimisation otherwise), which halves their time; scripts/setup.sh builds the
# engine the way users get it, and scripts/test.sh tests that one. They share one target
# directory, target/py-other: what does not depend on the Python (zstd, the core crates) is
# built once, and a version after the first rebuilds only pyo3 and the engine crate (cargo
# sees the interpreter change): ~25 s instead of ~150 s.
#
# SQUALL_TEST_PHASE=install only installs (CI builds them on one core, CARGO_BUILD_JOBS=1, while
# scripts/test.sh runs beside it); SQUALL_TEST_PHASE=run only runs the suites, on the venvs
# installed before.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
versions=("$@")
[ ${#versions[@]} -eq 0 ] && versions=(3.9 3.11 3.13)
jobs=${SQUALL_TEST_JOBS:-1}
phase=${SQUALL_TEST_PHASE:-all}
PYENV_ROOT=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
status=0
summary=()
ready=()
mkdir -p "$ROOT/target"
declare -A install_s
for ver in "${versions[@]}"; do
    full=$(ls "$PYENV_ROOT/versions" | grep -E "^${ver//./\\.}(\.[0-9]+)?$" | sort -V | tail -1)
    if [ -z "$full" ]; then
        echo "== $ver: no pyenv Python found under $PYENV_ROOT/versions" >&2
        summary+=("$ver: MISSING"); status=1; continue
    fi
    py="$PYENV_ROOT/versions/$full/bin/python"
    venv="$ROOT/.venv-$ver"
    if [ "$phase" = run ]; then
        if ! "$venv/bin/python" -c "import squall, pytest" 2>/dev/null; then
            echo "== $ver: not installed in $venv (SQUALL_TEST_PHASE=run needs an install first)" >&2
            summary+=("$ver: not installed"); status=1; continue
        fi
        install_s[$ver]=0
        ready+=("$ver")
        continue
    fi
    start=$(date +%s)
    echo "== $ver ($full): $venv"
    [ -x "$venv/bin/python" ] || "$py" -m venv "$venv" || { summary+=("$ver: venv failed"); status=1; continue; }
    if ! CARGO_TARGET_DIR="$ROOT/target/py-other" CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        "$venv/bin/python" -m pip install -q --upgrade ".[mcp]" pytest; then
        summary+=("$ver: install failed"); status=1; continue
    fi
    install_s[$ver]=$(( $(date +%s) - start ))
    ready+=("$ver")
done

if [ "$phase" = install ]; then
    printf '%s\n' "${summary[@]}"
    echo "installed: ${ready[*]}"
    exit $status
fi

# One version's suite, its output in target/pytest-<ver>.log and its summary line in
# target/pytest-<ver>.summary (a background job cannot append to this shell's arrays).
run_suite() {
    local ver=$1 venv="$ROOT/.venv-$1" start end rc line
    local only_main=(-m "not main_python_only")
    [ "${SQUALL_ALL_TESTS:-}" = 1 ] && only_main=()
    start=$(date +%s)
    # run from the checkout root with tests/ as the path: `import squall` is the installed one
    (cd "$ROOT" && "$venv/bin/python" -m pytest -q -rfEsx -p no:cacheprovider "${only_main[@]}" ${PYTEST_ARGS:-} tests) \
        > "$ROOT/target/pytest-$ver.log" 2>&1
    rc=$?
    end=$(date +%s)
    line=$(grep -E "passed|failed|error" "$ROOT/target/pytest-$ver.log" | tail -1)
    echo "$ver: rc=$rc; install ${install_s[$ver]}s, tests $((end - start))s; $line" > "$ROOT/target/pytest-$ver.summary"
    return $rc
}

for ver in "${ready[@]}"; do
    rm -f "$ROOT/target/pytest-$ver.summary"
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    echo "== $ver: tests (log: target/pytest-$ver.log)"
    run_suite "$ver" &
done
wait
for ver in "${ready[@]}"; do
    echo "== $ver"
    tail -n 15 "$ROOT/target/pytest-$ver.log"
    # a failure's name and its traceback, which the tail above can miss (CI keeps only this output)
    if grep -qE "^(FAILED|ERROR) " "$ROOT/target/pytest-$ver.log"; then
        echo "== $ver: failures"
        grep -E "^(FAILED|ERROR) " "$ROOT/target/pytest-$ver.log"
        sed -n '/^=* FAILURES =*$/,/^=* warnings summary =*$/p' "$ROOT/target/pytest-$ver.log" | head -n 150
    fi
    line=$(cat "$ROOT/target/pytest-$ver.summary" 2>/dev/null || echo "$ver: no summary (the run stopped early)")
    summary+=("$line")
    [[ $line == "$ver: rc=0;"* ]] || status=1
done
echo
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
