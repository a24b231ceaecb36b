#!/usr/bin/env bash
# Fetch the Kafka releases of the lint's history corpus (releases.tsv beside this script) and
# unpack their message specs for tests/lint/test_kafka_history.py.
#
#   tests/lint/kafka_history/fetch.sh
#
# Produces, under <project>/.cache/kafka-history/:
#   jars/                 each release's spec-carrying jars (no transitive dependencies)
#   specs/<version>/<artifactId>/<path inside the jar>
#                         the message specs of each release (JSON files with "validVersions")
#
# Idempotent and quiet like ../../oracle/fetch.sh: skipped when releases.tsv did not change;
# on failure the failing tool's output is shown. About 300 MB of jars the first time.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../../.." && pwd)"
RELEASES="$HERE/releases.tsv"
CACHE="$PROJECT/.cache/kafka-history"
M2="$PROJECT/.cache/m2"

FETCH_NAME="kafka-history fetch.sh"
# shellcheck source=../../fetch-lib.sh
source "$HERE/../../fetch-lib.sh"

require_tools mvn sha256sum
PYTHON=""
for candidate in "$PROJECT/.venv/bin/python" python3 python; do
  if command -v "$candidate" >/dev/null 2>&1; then
    PYTHON="$candidate"
    break
  fi
done
[[ -n "$PYTHON" ]] || die "a Python 3 interpreter is required to unpack the specs"

mkdir -p "$CACHE" "$M2"
lock_fetch "$CACHE/.fetch.lock"

STAMP="$(hash_of "$RELEASES" "${BASH_SOURCE[0]}")"
if [[ -f "$CACHE/specs/.releases.sha256" && "$(cat "$CACHE/specs/.releases.sha256")" == "$STAMP" ]]; then
  exit 0
fi

# 1. Jars: one Maven run copies every artifact of every release (dependency:copy takes several
# versions of one artifact, which a pom's dependency list does not).
POM="$CACHE/pom.xml"
{
  cat <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by tests/lint/kafka_history/fetch.sh from releases.tsv; not edited by hand. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.kafkaspecgen.lint</groupId>
  <artifactId>kafka-history-specs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <build><plugins><plugin>
    <groupId>org.apache.maven.plugins</groupId>
    <artifactId>maven-dependency-plugin</artifactId>
    <configuration><artifactItems>
XML
  grep -v '^#' "$RELEASES" | while read -r version artifacts; do
    [[ -n "$version" ]] || continue
    for artifact in $artifacts; do
      printf '      <artifactItem><groupId>org.apache.kafka</groupId><artifactId>%s</artifactId><version>%s</version></artifactItem>\n' \
        "$artifact" "$version"
    done
  done
  cat <<'XML'
    </artifactItems></configuration>
  </plugin></plugins></build>
</project>
XML
} >"$POM"
rm -rf "$CACHE/jars.tmp"
run_quiet mvn -B -q -f "$POM" "-Dmaven.repo.local=$M2" -DoutputDirectory="$CACHE/jars.tmp" \
  dependency:copy
rm -rf "$CACHE/jars"
mv "$CACHE/jars.tmp" "$CACHE/jars"

# 2. Specs of each release, laid out as specs/<version>/<artifactId>/<path inside the jar>.
rm -rf "$CACHE/specs.tmp"
run_quiet "$PYTHON" - "$RELEASES" "$CACHE/jars" "$CACHE/specs.tmp" <<'PY'
import pathlib
import sys
import zipfile

releases, jars, out = (pathlib.Path(a) for a in sys.argv[1:4])
for line in releases.read_text().splitlines():
    if not line.strip() or line.startswith("#"):
        continue
    version, *artifacts = line.split()
    for artifact in artifacts:
        jar = jars / f"{artifact}-{version}.jar"
        found = 0
        with zipfile.ZipFile(jar) as zf:
            for name in zf.namelist():
                if not name.endswith(".json") or name.startswith("META-INF/"):
                    continue
                text = zf.read(name)
                # A message spec always declares its versions; anything else is not one.
                if b'"validVersions"' not in text or b'"name"' not in text:
                    continue
                target = out / version / artifact / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(text)
                found += 1
        if not found:
            sys.exit(f"no message specs in {jar.name}")
PY
echo "$STAMP" >"$CACHE/specs.tmp/.releases.sha256"
rm -rf "$CACHE/specs"
mv "$CACHE/specs.tmp" "$CACHE/specs"
