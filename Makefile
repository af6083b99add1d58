# Development tasks. `make help` lists them.
.DEFAULT_GOAL := help
PY ?= python

.PHONY: help install dev test test-rust test-py check lint format types layers docs identical bench

help:  ## list the tasks
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

install:  ## install neardup with the test, dev and docs extras (a release build of the Rust core)
	$(PY) -m pip install ".[test,dev,docs]"

dev:  ## build the Rust extension in place for development (maturin develop --release)
	maturin develop --release --extras test,dev,docs

test:  ## the README's test command: cargo test of the core, then pytest
	bash scripts/test.sh

test-rust:  ## the Rust core's tests only
	cargo test --release -p neardup-core

test-py:  ## the Python suite only (pass ARGS="-k name" to select)
	$(PY) -m pytest -p no:cacheprovider $(ARGS)

check:  ## every check .ci/run makes before the tests
	bash scripts/check.sh

lint:  ## ruff lint
	ruff check python tests benchmarks scripts

format:  ## ruff format and import sorting, cargo fmt
	ruff check --select I --fix python tests benchmarks scripts
	ruff format python tests benchmarks scripts
	cargo fmt --all

types:  ## mypy on python/neardup (strict on the settings and stage contract)
	mypy

layers:  ## import-linter's layer contracts and the import-cycle check
	lint-imports
	$(PY) scripts/import_cycles.py

docs:  ## build the documentation site (MkDocs, strict) into site/
	mkdocs build --strict -d site

identical:  ## compare two records of outputs: make identical A=before/ B=after/
	$(PY) scripts/identical_outputs.py compare $(A) $(B)

bench:  ## the side-by-side benchmark against datasketch and rensa (by hand, not in CI)
	$(PY) benchmarks/bench_dedup.py
