# Developer entry points. Everything a fresh machine needs is installed from here.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run status watch test test-fast bench lint venv system spark-clients clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

## catalogd on the embedded default: a local HMS (Derby) with a demo warehouse, served on :26500
run: venv
	$(BIN)/catalogd serve --demo

## what the running catalogd reports (version, HMS, loading, HA, subscribers)
status: venv
	$(BIN)/catalogd admin status

## every change the local catalogd publishes, as a Spark driver's cache applies it
watch: venv
	$(BIN)/python -m subscriber watch 127.0.0.1:26500

## the whole test suite; runs `make system` first only when a system package or server is missing
test: venv
	@bash .ci/system-ready || $(MAKE) system
	$(BIN)/pytest

## system set-up: Debian packages the tests need (apt-get), the local PostgreSQL/MariaDB, the
## Hive Metastore 3.1/4.x jars for IDL generation (~/.m2), the runnable HMS 3.1.3 / 4.0.1
## releases with their Hadoop, and Spark's Hive 3.1/4.x clients (Maven Central, with mvn;
## cached in ~/.m2 and ~/.cache/catalogd)
system: venv
	bash .ci/install-system-deps
	bash .ci/start-services
	$(BIN)/python idl/generate/generate.py --fetch-only
	$(BIN)/python -m catalogd.hms.embedded --fetch 3.1 4.x
	bash .ci/fetch-spark-clients

## Spark's Hive 3.1/4.x metastore clients and the Iceberg Spark runtime (Maven Central, ~/.m2),
## and pyspark 4.1 for Iceberg (PyPI), under ~/.cache/catalogd: see .ci/fetch-spark-clients
spark-clients:
	bash .ci/fetch-spark-clients

## only the pure tier (no servers)
test-fast: venv
	$(BIN)/pytest tests/unit

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy catalogd subscriber idl

bench: venv
	$(BIN)/python bench/run_all.py

## build and tool caches only: user state in ./data (versions, cache pools, audit) is kept
clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache build *.egg-info
