#!/usr/bin/env bash
# The test command: formatting, lints, then every test of the workspace.
# Tests that need an external program or module say "SKIPPED: <what> not found";
# with BARRAGE_REQUIRE_EXTERNAL=1 (as in CI) they fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
# The house rules: file and function lengths, no import circle in the engine (debts may only shrink).
python3 scripts/house.py
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
