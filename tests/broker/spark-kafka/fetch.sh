#!/usr/bin/env bash
# Fetch Spark's Kafka source for the live tests and for the demo's --bootstrap-servers.
#
#   tests/broker/spark-kafka/fetch.sh
#
# Produces <project>/.cache/spark-kafka/jars/: spark-sql-kafka-0-10_2.13, its token provider,
# kafka-clients and commons-pool2, the run-time class path of ./pom.xml less what PySpark ships;
# handed to Spark as local files (spark.jars, spark_udfs.live.connector_conf). Idempotent and
# quiet like ../fetch.sh: skipped when the pom did not change.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../../.." && pwd)"
CACHE="$PROJECT/.cache/spark-kafka"
M2="$PROJECT/.cache/m2"

FETCH_NAME="spark-kafka fetch.sh"
# shellcheck source=../../fetch-lib.sh
source "$HERE/../../fetch-lib.sh"

require_tools mvn sha256sum
mkdir -p "$CACHE" "$M2"
lock_fetch "$CACHE/.fetch.lock"
copy_jars "$HERE/pom.xml" "$CACHE/jars" \
  "spark-sql-kafka-0-10_2.13-*" "spark-token-provider-kafka-0-10_2.13-*" "kafka-clients-*" \
  "commons-pool2-*"
