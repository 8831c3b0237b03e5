#!/usr/bin/env bash
# Runs every test: the Rust core's cargo tests, then pytest against the squall installed in
# .venv (run scripts/setup.sh first).
#   bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --quiet -p squall_trace -p squall_store -p squall_server
.venv/bin/python -m pytest -q "$@"
