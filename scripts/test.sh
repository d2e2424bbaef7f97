#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every check and test.
# Used by .ci/run and given in the README. Safe to run on a fresh Debian 12 machine that has
# Rust from rustup (the toolchain is pinned in rust-toolchain.toml).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "scripts/test.sh: Rust is needed (rustup with toolchain 1.95.0); cargo was not found." >&2
        exit 1
    fi
fi

# The pinned toolchain and its components (no-ops when already installed).
if command -v rustup >/dev/null 2>&1; then
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
