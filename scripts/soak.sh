#!/usr/bin/env bash
# The crash soak: the SIGKILL crash test with many more kills than CI runs (default 1,000),
# in release mode. Usage: scripts/soak.sh [kills]; EXTENTDB_CRASH_THREADS=12 scripts/soak.sh runs
# twelve sessions instead of four. A failure prints EXTENTDB_SEED to replay its choices and keeps
# the killed files.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTENTDB_CRASH_ITERATIONS="${1:-1000}" cargo test --release --locked -p extentdb --test crash -- --nocapture
