#!/usr/bin/env bash
# Fetch the pinned Apache Kafka broker for the broker tests and build their workload.
#
#   tests/broker/fetch.sh
#
# Produces, under <project>/.cache/kafka-<version>/:
#   broker-jars/      every runtime jar of tests/broker/pom.xml (kafka_2.13, kafka-server,
#                     kafka-clients 4.4.0 and what they need), copied by Maven
#   streams-jars/     kafka-streams 4.3.1 and its kafka-clients (tests/broker/streams/pom.xml;
#                     Maven Central has no kafka-streams 4.4.0)
#   broker-workload/  classes/: tests/broker/src/BrokerWorkload.java compiled against
#                     broker-jars/; streams-classes/: src/StreamsWorkload.java against streams-jars/
#   tiered-jars/      Kafka's LocalTieredStorage: the kafka-storage 4.3.1 test jar alone
#                     (tests/broker/tiered/pom.xml; no 4.4.0 test jar is published)
#   tiered-workload/  classes/: tests/broker/src/tiered/*.java (the tiered broker test's
#                     workload, its pausing file copy and the LogContext class 4.4.0 moved)
#                     compiled against broker-jars/ and tiered-jars/
#
# Idempotent and quiet like ../oracle/fetch.sh: each step is skipped when its inputs (pom,
# jar list, workload source) did not change; on failure the failing tool's output is shown.
set -euo pipefail

BROKER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$BROKER_DIR/../.." && pwd)"
KAFKA_VERSION="4.4.0"
CACHE="$PROJECT/.cache/kafka-$KAFKA_VERSION"
M2="$PROJECT/.cache/m2"
POM="$BROKER_DIR/pom.xml"
STREAMS_POM="$BROKER_DIR/streams/pom.xml"
SRC="$BROKER_DIR/src/BrokerWorkload.java"
STREAMS_SRC="$BROKER_DIR/src/StreamsWorkload.java"
TIERED_POM="$BROKER_DIR/tiered/pom.xml"
TIERED_SRC=("$BROKER_DIR"/src/tiered/*.java)

FETCH_NAME="broker fetch.sh"
# shellcheck source=../fetch-lib.sh
source "$BROKER_DIR/../fetch-lib.sh"

require_tools mvn java javac sha256sum
grep -q "<kafka.version>$KAFKA_VERSION</kafka.version>" "$POM" ||
  die "$POM does not pin kafka.version $KAFKA_VERSION (update KAFKA_VERSION here too)"

mkdir -p "$CACHE" "$M2"
lock_fetch "$CACHE/.broker-fetch.lock"

# 1. Jars ------------------------------------------------------------------------------------
copy_jars "$POM" "$CACHE/broker-jars" \
  "kafka_2.13-$KAFKA_VERSION" "kafka-server-$KAFKA_VERSION" "kafka-clients-$KAFKA_VERSION"
copy_jars "$STREAMS_POM" "$CACHE/streams-jars" kafka-streams-4.3.1
copy_jars "$TIERED_POM" "$CACHE/tiered-jars" kafka-storage-4.3.1-test

# 2. Workload --------------------------------------------------------------------------------
jars_hash() {
  (cd "$1" && ls -l --time-style=+%s -- *.jar) | sha256sum | cut -d' ' -f1
}
SOURCE_HASH="$( (sha256sum "$SRC" "$STREAMS_SRC" | cut -d' ' -f1; jars_hash "$CACHE/broker-jars";
  jars_hash "$CACHE/streams-jars"; javac -version 2>&1) | sha256sum | cut -d' ' -f1)"
OUT="$CACHE/broker-workload"
if [[ ! -f "$OUT/.source.sha256" || "$(cat "$OUT/.source.sha256")" != "$SOURCE_HASH" ]]; then
  rm -rf "$OUT.tmp"
  mkdir -p "$OUT.tmp/classes" "$OUT.tmp/streams-classes"
  run_quiet javac --release 17 -encoding UTF-8 -Xlint:-options -nowarn \
    -cp "$CACHE/broker-jars/*" -d "$OUT.tmp/classes" "$SRC"
  run_quiet javac --release 17 -encoding UTF-8 -Xlint:-options -nowarn \
    -cp "$CACHE/streams-jars/*" -d "$OUT.tmp/streams-classes" "$STREAMS_SRC"
  echo "$SOURCE_HASH" >"$OUT.tmp/.source.sha256"
  # The fixture compares this with the sources to spot a stale build.
  cat "$SRC" "$STREAMS_SRC" | sha256sum | cut -d' ' -f1 >"$OUT.tmp/sources.sha256"
  rm -rf "$OUT"
  mv "$OUT.tmp" "$OUT"
fi

# 3. The tiered broker test's classes (a folder of their own: the other workloads stay built) --
TIERED_HASH="$( (sha256sum "${TIERED_SRC[@]}" | cut -d' ' -f1; jars_hash "$CACHE/broker-jars";
  jars_hash "$CACHE/tiered-jars"; javac -version 2>&1) | sha256sum | cut -d' ' -f1)"
TIERED_OUT="$CACHE/tiered-workload"
if [[ ! -f "$TIERED_OUT/.source.sha256" || "$(cat "$TIERED_OUT/.source.sha256")" != "$TIERED_HASH" ]]; then
  rm -rf "$TIERED_OUT.tmp"
  mkdir -p "$TIERED_OUT.tmp/classes"
  run_quiet javac --release 17 -encoding UTF-8 -Xlint:-options -nowarn \
    -cp "$CACHE/broker-jars/*:$CACHE/tiered-jars/*" -d "$TIERED_OUT.tmp/classes" "${TIERED_SRC[@]}"
  echo "$TIERED_HASH" >"$TIERED_OUT.tmp/.source.sha256"
  cat "${TIERED_SRC[@]}" | sha256sum | cut -d' ' -f1 >"$TIERED_OUT.tmp/sources.sha256"
  rm -rf "$TIERED_OUT"
  mv "$TIERED_OUT.tmp" "$TIERED_OUT"
fi
