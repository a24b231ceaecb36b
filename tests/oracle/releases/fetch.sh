#!/usr/bin/env bash
# Fetch the jars of the Kafka release lines whose group coordinator records are JSON specs
# (2.8 to 4.4, one jar per line, see pom.xml) for the oracle test of the vendored table
# codegen/forensics/release_specs.json.
#
#   tests/oracle/releases/fetch.sh
#
# Produces <project>/.cache/kafka-releases/jars/. Idempotent (skipped when pom.xml did not
# change); quiet on success. To regenerate the vendored table from the jars:
#   python -m codegen.forensics.release_specs .cache/kafka-releases/jars \
#     > codegen/forensics/release_specs.json
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../../.." && pwd)"
CACHE="$PROJECT/.cache/kafka-releases"
M2="$PROJECT/.cache/m2"
POM="$HERE/pom.xml"

FETCH_NAME="releases fetch.sh"
# shellcheck source=../../fetch-lib.sh
source "$HERE/../../fetch-lib.sh"

require_tools mvn sha256sum
mkdir -p "$CACHE" "$M2"

POM_HASH="$(hash_of "$POM")"
if [[ -f "$CACHE/jars/.pom.sha256" && "$(cat "$CACHE/jars/.pom.sha256")" == "$POM_HASH" ]]; then
  exit 0
fi
rm -rf "$CACHE/jars.tmp"
run_quiet mvn -B -q -f "$POM" "-Dmaven.repo.local=$M2" -DoutputDirectory="$CACHE/jars.tmp" \
  dependency:copy
echo "$POM_HASH" >"$CACHE/jars.tmp/.pom.sha256"
rm -rf "$CACHE/jars"
mv "$CACHE/jars.tmp" "$CACHE/jars"
