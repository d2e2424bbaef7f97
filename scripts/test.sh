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

# Interoperability with real SQL Server clients: a Python virtual environment with pinned
# clients (PyPI), then the ignored interop tests against `extentdb serve`.
echo "== interop clients (FreeTDS tsql, python-tds, pymssql, pyOpenSSL)"
if ! command -v tsql >/dev/null 2>&1 || ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq freetds-bin python3-venv python3-pip >/dev/null
fi
VENV="target/interop-venv"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check python-tds==1.17.1 pymssql==2.4.6 pyOpenSSL==26.4.0
echo "== interop tests (FreeTDS tsql, pytds, pymssql, go-mssqldb, mssql-jdbc; plain and TLS)"
# The only ignored tests are the interop ones; --workspace keeps the build of the run above.
EXTENTDB_INTEROP_PYTHON="$PWD/$VENV/bin/python" cargo test --workspace --locked -- --ignored
