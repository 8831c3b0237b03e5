#!/usr/bin/env bash
# Sets squall up from a clean clone and records the bundled example.
#   bash scripts/setup.sh
# Makes .venv (Python from $PYTHON, default python3), installs squall into it the way a user
# would (`pip install .`: maturin builds the Rust engine, profile-guided by
# scripts/install_engine.sh; SQUALL_PGO=0 for one plain build), installs the test tools, then
# runs the example under `squall run`: its output on stdout, the recording's summary on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
bash scripts/install_engine.sh .venv -r requirements-test.txt
echo "squall installed in .venv ($(.venv/bin/squall --version)); recording the bundled example:" >&2
.venv/bin/squall run examples/invoices/main.py
