# Developer entry points. Everything a fresh machine needs is installed from here.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast bench lint venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

## catalogd on the embedded default: a local HMS (Derby) with a demo warehouse, served on :26500
run: venv
	$(BIN)/catalogd serve --demo

## the whole test suite (installs system packages and starts local databases when missing)
test: venv
	bash .ci/install-system-deps
	bash .ci/start-services
	$(BIN)/pytest

## only the pure tier (no servers)
test-fast: venv
	$(BIN)/pytest tests/unit

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy catalogd subscriber idl

bench: venv
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis data
