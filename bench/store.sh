#!/usr/bin/env bash
# Recording-file targets (DESIGN.md), measured on a synthetic 10M-entry recording in one run:
# save throughput, bytes per entry on disk before values, open time, fn_call_stats on the loaded
# timeline, a page of 1,000 entries.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release -p squall_store --example store_bench -- "$@"
