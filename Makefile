# Everyday commands. `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup python-setup oracle-setup demo test test-fast fuzz sanitize generate check lint typecheck bench clean

$(STAMP): pyproject.toml
	@echo "python-setup: a venv in $(VENV) with the project (editable; its C engine is built)," \
	  "every extra and the test tools; pip, 2-3 minutes the first time"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,spark,dev,bench,report]'
	touch $(STAMP)
	@echo "python-setup: done"

## setup: everything make test needs: the machine's tools (Java 17, Maven, a C compiler,
## Chromium: installed with apt-get where this user can, else a stop that says how), the Python
## set-up, Kafka's jars (the releases the replay tests run among them), the S3 server
setup: machine-setup python-setup oracle-setup lint-history-setup broker-setup s3-setup replay-setup

## machine-check: the tools the tests need from the machine, with the command that installs
## each missing one; a failure when one is missing (ALLOW_MISSING="cc chromium" spares those)
.PHONY: machine-check machine-setup
machine-check:
	@bash tests/machine.sh check

## machine-setup: install the missing tools with apt-get (as root or with sudo that asks no
## password), then check
machine-setup:
	@bash tests/machine.sh install

## python-setup: Python venv with the project, every extra it uses and the test tools
python-setup: $(STAMP)

## broker-setup: the Kafka 4.4.0 broker (Maven) and the workload of the broker tests (-m kafka),
## and Spark's Kafka source (spark-sql-kafka) for live topics
.PHONY: broker-setup
broker-setup: spark-kafka-setup
	@echo "broker-setup: the Kafka 4.4.0 broker and its workload (Maven, into .cache)"
	@bash tests/broker/fetch.sh

## s3-setup: the S3-compatible server of the object-storage tests (s3proxy, Maven, into .cache)
.PHONY: s3-setup
s3-setup:
	@echo "s3-setup: the S3-compatible server of the object-storage tests (s3proxy, Maven, into .cache)"
	@bash tests/s3/fetch.sh

## spark-kafka-setup: Spark's Kafka source (spark-sql-kafka, Maven) for live topics
.PHONY: spark-kafka-setup
spark-kafka-setup:
	@echo "spark-kafka-setup: Spark's Kafka source (Maven, into .cache)"
	@bash tests/broker/spark-kafka/fetch.sh

## oracle-setup: Kafka 4.4.0 reference jars (Maven) and the harness of the oracle tests
oracle-setup:
	@echo "oracle-setup: Kafka 4.4.0's jars, the release lines 2.8-4.4 and the oracle harness" \
	  "(Maven, into .cache; a few minutes the first time, then nothing to do)"
	@bash tests/oracle/fetch.sh
	@bash tests/oracle/releases/fetch.sh

## lint-history-setup: the specs of every Kafka release from 3.3.1 to 4.4.0 (kafka-clients and the
## coordinator jars, Maven) that tests/lint/test_kafka_history.py lints pair by pair
.PHONY: lint-history-setup
lint-history-setup:
	@echo "lint-history-setup: the specs of Kafka's releases 3.3.1-4.4.0 (Maven, into .cache;" \
	  "about 300 MB of jars the first time, then nothing to do)"
	@bash tests/lint/kafka_history/fetch.sh

## replay-setup: the jars of the Kafka releases make test replays logs through (and starts as
## older brokers): tests/replay/releases.txt, fetched as a user's first --replay would (into
## .cache/kafka-specgen; what Maven already holds in .cache/m2 is read there), harness compiled
.PHONY: replay-setup
replay-setup: python-setup
	@echo "replay-setup: the jars of the releases the replay tests run (into .cache/kafka-specgen)"
	@bash tests/replay/fetch.sh

## test-replay-matrix: the replay of every release line 2.8-4.4 and patch release the replay
## knows, with each group coordinator it can run (tests/test_replay_matrix.py); fetches their
## jars first (~500 MB the first time). make test runs a representative part.
.PHONY: test-replay-matrix
test-replay-matrix: setup
	@bash tests/replay/fetch.sh --all
	KAFKA_SPECGEN_REPLAY_MATRIX=1 $(PY) -m pytest -n 2 -o console_output_style=classic -rfEs \
	  -m replay_matrix tests/test_replay_matrix.py

## test-broker-downgrades: the real downgrades of tests/test_broker_downgrades.py that make test
## leaves out (Kafka 4.4.0 at 4.0-IV3 then a 4.0.2 broker; the latest log given to 3.9.2)
.PHONY: test-broker-downgrades
test-broker-downgrades: setup
	KAFKA_SPECGEN_BROKER_DOWNGRADES=1 $(PY) -m pytest -o console_output_style=classic -rfEs \
	  tests/test_broker_downgrades.py

## demo: the main job: write a small cluster's disks (1M records of __consumer_offsets, data topics,
## __transaction_state, __cluster_metadata), decode them with Spark, run the forensics on them.
## DUMP=/path/to/logdir decodes your own dump instead; BOOTSTRAP=host:port reads a running
## cluster's topic live (Spark's Kafka source); OUT=folder says where results go (default: a
## new folder per run below .cache/demo); REMOTE=sc://host:port runs it on a Spark Connect server
## (make connect-server). It ends with where the results are and what to try next.
demo: python-setup $(if $(BOOTSTRAP),spark-kafka-setup)
	$(PY) -m spark_udfs.demo $(if $(DUMP),--input '$(DUMP)') \
	  $(if $(BOOTSTRAP),--bootstrap-servers '$(BOOTSTRAP)') $(if $(OUT),--out '$(OUT)') \
	  $(if $(REMOTE),--remote '$(REMOTE)')

# make test's pytest: two workers; a progress line at every tenth of the estimated time
# (tests/progress.py, from each phase's last run) instead of a percentage of the tests; every
# skip and xfail named with its reason.
PYTEST := $(PY) -m pytest -n 2 --dist loadgroup -o console_output_style=classic \
  --time-progress -rfEsxX
PHASE := bash tests/phase.sh

## test: the set-up, then generated code up to date, style and types, then every test (codecs
## on the native backend), then the codec tests again on the pure-Python backend; each phase
## says what it runs and how long it took. A phase is one line: $(PHASE) "name" command...
test:
	@$(PHASE) begin
	@$(PHASE) "set-up (make setup)" $(MAKE) --no-print-directory setup
	@$(PHASE) "checks (generated code, ruff, import-linter, mypy)" \
	  $(MAKE) --no-print-directory check lint typecheck
	@$(PHASE) "every test, codecs on the native backend" $(PYTEST)
	@SPECGEN_BACKEND=pure $(PHASE) "codec tests on the pure backend" $(PYTEST) -m codec
	@SPECGEN_SPARK_CONNECT=1 $(PHASE) "Spark tests over a local Spark Connect server" \
	  $(PY) -m pytest -o console_output_style=classic --time-progress -rfEsxX -m spark_connect
	@$(PHASE) end

## connect-server: a Spark Connect server for kafka-log and the UDFs (python -m
## spark_udfs.connect_server start): PySpark's own, this venv's Python for its workers, on
## 127.0.0.1:15002 (PORT=n), relative paths from WORKDIR (default: this folder), KAFKA=1 adds
## Spark's Kafka source; its pid file and log in .cache/connect-server. connect-server-stop ends it.
.PHONY: connect-server connect-server-stop
connect-server: python-setup $(if $(KAFKA),spark-kafka-setup)
	$(PY) -m spark_udfs.connect_server start $(if $(PORT),--port $(PORT)) \
	  $(if $(WORKDIR),--workdir '$(WORKDIR)') $(if $(KAFKA),--kafka-jars .cache/spark-kafka/jars)

connect-server-stop:
	$(PY) -m spark_udfs.connect_server stop

## test-cluster: the Spark standalone cluster tests alone (tests/spark/test_standalone_cluster.py:
## a master and two workers from pyspark's scripts on 127.0.0.1, over the S3 server; make test
## runs them too)
.PHONY: test-cluster
test-cluster: $(STAMP)
	$(PY) -m pytest -q -rfEsxX -m cluster tests/spark

## test-fast: the tests that need neither Spark nor the Kafka jars
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -q -m "not spark and not oracle and not kafka"

## test-cuts: --as-of at every batch boundary of the broker tests' log and at every
## __consumer_offsets offset of its busiest partition (make test compares a seeded sample of
## 24 and 6, and the settled points): groups, lag and transactions against a copy
## of the log dir as it was then, and the forensics against the broker's answers at its
## settled points; the broker (tests/test_broker.py) runs with CUTS_OFFSETS_PARTITIONS
## __consumer_offsets partitions (Kafka's default 50; make test's run has 3), about ten minutes
CUTS_OFFSETS_PARTITIONS ?= 50
.PHONY: test-cuts
test-cuts: $(STAMP)
	KAFKA_SPECGEN_BROKER_CUTS=all KAFKA_SPECGEN_BROKER_OFFSETS_PARTITIONS=$(CUTS_OFFSETS_PARTITIONS) \
	  $(PY) -m pytest -q -s tests/test_broker.py -k "every_moment or every_settled_point"

## fuzz: the tests/fuzz property tests for FUZZ_SECONDS in all (an equal share per test function)
FUZZ_SECONDS ?= 600
fuzz: $(STAMP)
	KAFKA_SPECGEN_FUZZ=$(FUZZ_SECONDS) $(PY) -m pytest tests/fuzz -q

## sanitize: the native engine and record loop built with AddressSanitizer and
## UndefinedBehaviorSanitizer (for the run only, never over the checkout's build), then the
## native tests and a short fuzz round (SANITIZE_FUZZ_SECONDS in all) under them; any report
## fails the run. About 15 minutes of CPU time for the tests (906 s on a busy machine) and the
## fuzz round; not part of make test. The list reaches every function of the engine's C parts
## but a few error paths and two unused getters (checked with a --coverage build and gcov).
SANITIZE_FUZZ_SECONDS ?= 60
SANITIZE_EXAMPLES ?= 2
SANITIZE_CC := $(or $(CC),cc)
SANITIZE_TESTS := tests/test_native_arguments.py tests/test_read_limits.py \
  tests/test_native_engine.py tests/test_native_records.py tests/test_native_columns.py \
  tests/test_record_pair_reader.py tests/test_buffers.py tests/test_arrow_columnar.py \
  tests/test_batch_headers.py tests/test_log_ends.py tests/test_jsonl_native.py tests/test_native_user_topics.py \
  tests/test_jsonl_wire.py tests/test_text_table.py tests/test_table_native.py \
  tests/test_user_wire_fallback.py tests/test_views_superseded.py tests/test_views_live.py \
  tests/test_forensics_loaded.py tests/test_record_slices.py \
  tests/test_views_effects.py tests/test_views_offsets.py tests/test_views_commit_columns.py \
  tests/test_engine_build_check.py \
  tests/test_burrow_windows.py tests/test_forensics_lag.py::test_history_and_lag_over_time \
  tests/test_forensics_lag.py::test_now_by_the_native_walk_is_the_reference \
  tests/test_forensics_lag.py::test_now_by_the_commits_read_is_the_reference \
  tests/test_forensics_lag.py::test_now_by_the_commits_read_of_broken_segments_is_the_walk_s \
  tests/test_forensics_lag.py::test_lag_walks_every_partition_but_the_first_for_now \
  tests/test_forensics_lag.py::test_commit_arrays_are_the_commits_json \
  tests/test_forensics_lag.py::test_commit_lags_by_the_engine_are_the_reference \
  tests/test_forensics_lag.py::test_commit_lags_of_log_ends_past_the_cache_are_the_reference \
  tests/test_forensics_lag.py::test_commit_log_ends_checks_its_buffers \
  tests/test_forensics_lag.py::test_commit_log_ends_at_every_time \
  tests/test_forensics_lag.py::test_lag_lines_are_the_groups_json \
  tests/test_forensics_lag.py::test_lag_lines_of_odd_values_are_orjson_s \
  tests/test_forensics_lag.py::test_lag_write_keeps_what_a_callback_drops \
  tests/test_forensics_lag.py::test_lag_lines_keep_repeated_texts_apart \
  tests/test_forensics_lag.py::test_written_group_lines_are_the_groups_lines \
  tests/test_forensics_lag.py::test_runs_of_refused_groups_are_the_reference_s \
  tests/test_forensics_lag.py::test_partition_objects_are_the_dataclass_s \
  tests/test_forensics_lag.py::test_slot_objects_refuses_what_it_cannot_make \
  tests/test_forensics_groups_json.py
SANITIZE_ENV = SPECGEN_NATIVE_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1" \
  LD_PRELOAD="$$($(SANITIZE_CC) -print-file-name=libasan.so)" PYTHONMALLOC=malloc \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  SPECGEN_REQUIRE_NATIVE=1 SPECGEN_BACKEND=native
sanitize: $(STAMP)
	$(SANITIZE_ENV) SPECGEN_NATIVE_EXAMPLES=$(SANITIZE_EXAMPLES) SPECGEN_EXAMPLES=$(SANITIZE_EXAMPLES) \
	  $(PY) -m pytest -q -p no:cacheprovider --capture=sys $(SANITIZE_TESTS)
	$(SANITIZE_ENV) KAFKA_SPECGEN_FUZZ=$(SANITIZE_FUZZ_SECONDS) \
	  $(PY) -m pytest -q -p no:cacheprovider --capture=sys tests/fuzz/test_fuzz_decode.py tests/fuzz/test_fuzz_segments.py \
	  tests/fuzz/test_fuzz_commit_columns.py

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
