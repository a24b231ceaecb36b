# Everyday commands. `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup python-setup oracle-setup demo test test-fast fuzz generate check lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,spark,dev,bench,report]'
	touch $(STAMP)

## setup: everything make test needs: the Python set-up and the oracle set-up
setup: python-setup oracle-setup broker-setup

## python-setup: Python venv with the project, every extra it uses and the test tools
python-setup: $(STAMP)

## broker-setup: the Kafka 4.4.0 broker (Maven) and the workload of the broker tests (-m kafka),
## and Spark's Kafka source (spark-sql-kafka) for live topics
.PHONY: broker-setup
broker-setup: spark-kafka-setup
	bash tests/broker/fetch.sh

## spark-kafka-setup: Spark's Kafka source (spark-sql-kafka, Maven) for live topics
.PHONY: spark-kafka-setup
spark-kafka-setup:
	bash tests/broker/spark-kafka/fetch.sh

## oracle-setup: Kafka 4.4.0 reference jars (Maven) and the harness of the oracle tests
oracle-setup:
	bash tests/oracle/fetch.sh
	bash tests/oracle/releases/fetch.sh

## demo: the main job: synthesize a 1M-record __consumer_offsets dump and decode it with Spark.
## DUMP=/path/to/logdir decodes your own dump instead; BOOTSTRAP=host:port reads a running
## cluster's topic live (Spark's Kafka source); OUT=folder says where results go.
demo: python-setup $(if $(BOOTSTRAP),spark-kafka-setup)
	$(PY) -m spark_udfs.demo $(if $(DUMP),--input '$(DUMP)') \
	  $(if $(BOOTSTRAP),--bootstrap-servers '$(BOOTSTRAP)') $(if $(OUT),--out '$(OUT)')

## test: generated code up to date, style and types, then every test (codecs on the native
## backend), then the codec tests again on the pure-Python backend
test: setup
	$(PY) -m codegen check
	$(MAKE) --no-print-directory lint typecheck
	$(PY) -m pytest -n 2 --dist loadgroup -q
	SPECGEN_BACKEND=pure $(PY) -m pytest -n 2 --dist loadgroup -q -m codec

## test-fast: the tests that need neither Spark nor the Kafka jars
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -q -m "not spark and not oracle and not kafka"

## fuzz: the tests/fuzz property tests for FUZZ_SECONDS in all (an equal share per test function)
FUZZ_SECONDS ?= 600
fuzz: $(STAMP)
	KAFKA_SPECGEN_FUZZ=$(FUZZ_SECONDS) $(PY) -m pytest tests/fuzz -q

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
	$(PY) bench/bench_transactions.py
	$(PY) bench/bench_spark.py

clean:
	rm -rf $(VENV) .cache .mypy_cache .pytest_cache .ruff_cache
