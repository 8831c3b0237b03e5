#!/usr/bin/env bash
# Installs squall into a venv as `pip install .` does, with the engine's Rust built
# profile-guided: built once instrumented, trained on the programs of scripts/pgo_train.py, then
# built again optimised for what that run did (hot paths laid out together, branches ordered by
# their counts). Recorded programs run ~10% faster for it (docs/benchmarks.md, "Fifteenth
# session"); it costs a second build and a minute of training.
#   bash scripts/install_engine.sh VENV [pip install args...]
# SQUALL_PGO=0 builds once, without the profile. Without llvm-profdata (the llvm-tools component
# of the Rust toolchain, which this tries to add with rustup) it says so and does the same.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$1
shift
py="$venv/bin/python"
if [ "${SQUALL_PGO:-1}" = 0 ]; then
    "$py" -m pip install -q . "$@"
    exit
fi
tool="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata"
if [ ! -x "$tool" ]; then
    rustup component add llvm-tools >&2 || true
fi
if [ ! -x "$tool" ]; then
    echo "install_engine: no $tool (rustup component add llvm-tools); building without a profile" >&2
    "$py" -m pip install -q . "$@"
    exit
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "install_engine: building the engine instrumented, to train it" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$work/raw" "$py" -m pip install -q . "$@"
"$py" scripts/pgo_train.py
"$tool" merge -o "$work/engine.profdata" "$work/raw"
echo "install_engine: building the engine with its profile" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$work/engine.profdata" "$py" -m pip install -q --force-reinstall --no-deps .
