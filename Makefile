# Everyday commands. `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast generate check lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[spark,dev,bench,report]'
	touch $(STAMP)

## setup: Python venv with every dependency, Kafka 4.4.0 reference jars and harness
setup: $(STAMP)
	bash tests/oracle/fetch.sh
	bash tests/oracle/releases/fetch.sh

## demo: the main job: synthesize a 1M-record __consumer_offsets dump and decode it with Spark
demo: setup
	$(PY) -m spark_udfs.demo

## test: generated code up to date, style and types, then every test
test: setup
	$(PY) -m codegen check
	$(MAKE) --no-print-directory lint typecheck
	$(PY) -m pytest -n 2 --dist loadgroup -q

## test-fast: the tests that need neither Spark nor the Kafka jars
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -q -m "not spark and not oracle"

generate: $(STAMP)
	$(PY) -m codegen generate

check: $(STAMP)
	$(PY) -m codegen check

lint: $(STAMP)
	$(PY) -m ruff check codegen spark_udfs tests bench generated
	$(PY) -m ruff format --check codegen spark_udfs tests bench
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(PY) -m mypy codegen spark_udfs generated

bench: setup
	$(PY) bench/bench_codecs.py
	$(PY) bench/bench_dumps.py
	$(PY) bench/bench_forensics.py
	$(PY) bench/bench_spark.py

clean:
	rm -rf $(VENV) .cache .mypy_cache .pytest_cache .ruff_cache
