#!/usr/bin/env bash
# The test command of the README: the Rust core's own tests, then the Python suite
# against the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release -p neardup-core
python -m pytest -p no:cacheprovider --durations=25 "$@"
