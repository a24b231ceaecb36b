#!/usr/bin/env bash
# Fetch the pinned Apache Kafka broker for the broker tests and build their workload.
#
#   tests/broker/fetch.sh
#
# Produces, under <project>/.cache/kafka-<version>/:
#   broker-jars/      every runtime jar of tests/broker/pom.xml (kafka_2.13, kafka-server,
#                     kafka-clients 4.4.0 and what they need), copied by Maven
#   broker-workload/  tests/broker/src/BrokerWorkload.java compiled against broker-jars/
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
SRC="$BROKER_DIR/src/BrokerWorkload.java"

die() {
  echo "broker fetch.sh: $*" >&2
  exit 1
}

for tool in mvn java javac sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not on PATH"
done
grep -q "<kafka.version>$KAFKA_VERSION</kafka.version>" "$POM" ||
  die "$POM does not pin kafka.version $KAFKA_VERSION (update KAFKA_VERSION here too)"

mkdir -p "$CACHE" "$M2"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.broker-fetch.lock"
  flock 9
fi

LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT

run_quiet() {
  if ! "$@" >"$LOG" 2>&1; then
    cat "$LOG" >&2
    die "command failed: $*"
  fi
}

# 1. Jars ------------------------------------------------------------------------------------
POM_HASH="$(sha256sum "$POM" | cut -d' ' -f1)"
if [[ ! -f "$CACHE/broker-jars/.pom.sha256" || "$(cat "$CACHE/broker-jars/.pom.sha256")" != "$POM_HASH" ]]; then
  rm -rf "$CACHE/broker-jars.tmp"
  run_quiet mvn -B -q -f "$POM" \
    "-Dmaven.repo.local=$M2" \
    -DincludeScope=runtime \
    -DoutputDirectory="$CACHE/broker-jars.tmp" \
    dependency:copy-dependencies
  for jar in kafka_2.13 kafka-server kafka-clients; do
    ls "$CACHE/broker-jars.tmp/$jar-$KAFKA_VERSION.jar" >/dev/null 2>&1 ||
      die "Maven did not produce $jar-$KAFKA_VERSION.jar"
  done
  echo "$POM_HASH" >"$CACHE/broker-jars.tmp/.pom.sha256"
  rm -rf "$CACHE/broker-jars"
  mv "$CACHE/broker-jars.tmp" "$CACHE/broker-jars"
fi

# 2. Workload --------------------------------------------------------------------------------
JARS_HASH="$( (cd "$CACHE/broker-jars" && ls -l --time-style=+%s -- *.jar) | sha256sum | cut -d' ' -f1)"
SOURCE_HASH="$( (sha256sum "$SRC" | cut -d' ' -f1; echo "$JARS_HASH"; javac -version 2>&1) | sha256sum | cut -d' ' -f1)"
OUT="$CACHE/broker-workload"
if [[ ! -f "$OUT/.source.sha256" || "$(cat "$OUT/.source.sha256")" != "$SOURCE_HASH" ]]; then
  rm -rf "$OUT.tmp"
  mkdir -p "$OUT.tmp/classes"
  run_quiet javac --release 17 -encoding UTF-8 -Xlint:-options -nowarn \
    -cp "$CACHE/broker-jars/*" -d "$OUT.tmp/classes" "$SRC"
  echo "$SOURCE_HASH" >"$OUT.tmp/.source.sha256"
  # The fixture compares this with the source to spot a stale build.
  sha256sum "$SRC" | cut -d' ' -f1 >"$OUT.tmp/BrokerWorkload.java.sha256"
  rm -rf "$OUT"
  mv "$OUT.tmp" "$OUT"
fi
