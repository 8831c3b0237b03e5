#!/usr/bin/env bash
# Runs squall's test suite on several CPython versions (pyenv).
#
#   scripts/test_pythons.sh [VERSION ...]      # default: 3.9 3.11 3.13
#
# For each version: creates (or reuses) .venv-<ver> with that pyenv Python, installs squall
# there with `pip install .[mcp]` (builds the Rust engine; CARGO_TARGET_DIR=target/py<ver> keeps
# the builds apart; the mcp extra needs 3.10+, so on 3.9 the MCP tests skip) plus pytest, then
# runs pytest on tests/ (from the checkout root; `import squall` is the installed package).
# Prints a summary line per version (the log, with skip/xfail reasons: target/pytest-<ver>.log)
# and exits non-zero if any version failed. Extra pytest args: PYTEST_ARGS="-x -k foo". Tests
# marked `main_python_only` (what the Python version does not change: pyproject.toml) run in
# scripts/test.sh only; SQUALL_ALL_TESTS=1 runs them here too.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
versions=("$@")
[ ${#versions[@]} -eq 0 ] && versions=(3.9 3.11 3.13)
PYENV_ROOT=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
status=0
summary=()
for ver in "${versions[@]}"; do
    full=$(ls "$PYENV_ROOT/versions" | grep -E "^${ver//./\\.}(\.[0-9]+)?$" | sort -V | tail -1)
    if [ -z "$full" ]; then
        echo "== $ver: no pyenv Python found under $PYENV_ROOT/versions" >&2
        summary+=("$ver: MISSING"); status=1; continue
    fi
    py="$PYENV_ROOT/versions/$full/bin/python"
    venv="$ROOT/.venv-$ver"
    start=$(date +%s)
    echo "== $ver ($full): $venv"
    [ -x "$venv/bin/python" ] || "$py" -m venv "$venv" || { summary+=("$ver: venv failed"); status=1; continue; }
    if ! CARGO_TARGET_DIR="$ROOT/target/py$ver" "$venv/bin/python" -m pip install -q --upgrade ".[mcp]" pytest; then
        summary+=("$ver: install failed"); status=1; continue
    fi
    built=$(date +%s)
    # run from tests/ so `import squall` is the installed one, not python/ of the checkout
    only_main=(-m "not main_python_only")
    [ "${SQUALL_ALL_TESTS:-}" = 1 ] && only_main=()
    (cd "$ROOT" && "$venv/bin/python" -m pytest -q -rsx -p no:cacheprovider "${only_main[@]}" ${PYTEST_ARGS:-} tests) \
        > "$ROOT/target/pytest-$ver.log" 2>&1
    rc=$?
    end=$(date +%s)
    tail -n 15 "$ROOT/target/pytest-$ver.log"
    line=$(grep -E "passed|failed|error" "$ROOT/target/pytest-$ver.log" | tail -1)
    summary+=("$ver ($full): rc=$rc; install $((built - start))s, tests $((end - built))s; $line")
    [ $rc -eq 0 ] || status=1
done
echo
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
