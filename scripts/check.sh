#!/usr/bin/env bash
# The development checks (run by .ci/run before the tests, and by `make check`): Python lint
# and format, types, the import layers and cycles, Rust format and lints, the docs site.
# Needs the `dev` and `docs` extras: pip install ".[test,dev,docs]".
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== ruff"; ruff check python tests benchmarks scripts && ruff format --check python tests benchmarks scripts
echo "== mypy"; mypy
echo "== import layers"; lint-imports
echo "== import cycles"; python scripts/import_cycles.py
echo "== cargo fmt"; cargo fmt --all --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets --release -- -D warnings
echo "== docs"; NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet -d "$(mktemp -d)"
