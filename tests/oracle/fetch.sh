#!/usr/bin/env bash
# Fetch the reference Apache Kafka release for the oracle tests and build the harness.
#
#   tests/oracle/fetch.sh
#
# Produces, under <project>/.cache/kafka-<version>/:
#   jars/      every runtime jar of tests/oracle/pom.xml (transitive), copied by Maven
#   dumplog-jars/  the class path of DumpLogSegments (tests/oracle/dumplog/pom.xml; 4.3.1, as
#              kafka-tools 4.4.0 is not on Maven Central)
#   specs/     the message spec JSON files found inside those jars, as
#              specs/<artifactId>/<path inside the jar>, plus specs/COUNTS.tsv
#   harness/   tests/oracle/src/OracleHarness.java compiled against jars/
#
# and under <project>/.cache/kafka-<previous version>/ (tests/oracle/previous/pom.xml):
#   jars/      the spec-carrying jars of the previous release line (no transitive dependencies)
#   specs/     their message specs, laid out as above (tests/corpus.py finds both corpora)
#
# Idempotent: each step is skipped when its inputs (pom, jar list, harness source) did not
# change. Quiet on success; on failure it prints the failing tool's output and exits non-zero.
set -euo pipefail

ORACLE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$ORACLE_DIR/../.." && pwd)"
KAFKA_VERSION="4.4.0"
CACHE="$PROJECT/.cache/kafka-$KAFKA_VERSION"
M2="$PROJECT/.cache/m2"
POM="$ORACLE_DIR/pom.xml"
DUMPLOG_POM="$ORACLE_DIR/dumplog/pom.xml"
PREVIOUS_POM="$ORACLE_DIR/previous/pom.xml"
SRC="$ORACLE_DIR/src/OracleHarness.java"

FETCH_NAME="fetch.sh"
# shellcheck source=../fetch-lib.sh
source "$ORACLE_DIR/../fetch-lib.sh"

require_tools mvn java javac sha256sum
PYTHON=""
for candidate in "$PROJECT/.venv/bin/python" python3 python; do
  if command -v "$candidate" >/dev/null 2>&1; then
    PYTHON="$candidate"
    break
  fi
done
[[ -n "$PYTHON" ]] || die "a Python 3 interpreter is required to extract the specs"

grep -q "<kafka.version>$KAFKA_VERSION</kafka.version>" "$POM" ||
  die "$POM does not pin kafka.version $KAFKA_VERSION (update KAFKA_VERSION here too)"

mkdir -p "$CACHE" "$M2"

lock_fetch "$CACHE/.fetch.lock"

# 1. Jars ------------------------------------------------------------------------------------
copy_jars "$POM" "$CACHE/jars" "kafka-clients-$KAFKA_VERSION"

# 1b. DumpLogSegments' own class path ---------------------------------------------------------
copy_jars "$DUMPLOG_POM" "$CACHE/dumplog-jars" "kafka-tools-*"

JARS_HASH="$( (cd "$CACHE/jars" && ls -l --time-style=+%s -- *.jar) | sha256sum | cut -d' ' -f1)"

# 2. Specs -----------------------------------------------------------------------------------
extract_specs() {
  # extract_specs JARS_DIR OUT_DIR STAMP: unpack the message specs of every jar in JARS_DIR;
  # STAMP (written to OUT_DIR/.jars.sha256) says which inputs they came from.
  local jars="$1" out="$2" stamp="$3"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  run_quiet "$PYTHON" - "$jars" "$out.tmp" <<'PY'
"""Copy every message spec JSON out of the jars: specs/<artifactId>/<path inside the jar>."""
import pathlib
import re
import sys
import zipfile

jars, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
counts = {}
for jar in sorted(jars.glob("*.jar")):
    artifact = re.sub(r"-\d[^-]*(-[A-Za-z0-9]+)?\.jar$", "", jar.name)
    with zipfile.ZipFile(jar) as zf:
        for name in zf.namelist():
            if not name.endswith(".json") or name.startswith("META-INF/"):
                continue
            text = zf.read(name)
            # A message spec always declares its versions; anything else is not ours.
            if b'"validVersions"' not in text or b'"name"' not in text:
                continue
            target = out / artifact / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text)
            counts[(artifact, jar.name)] = counts.get((artifact, jar.name), 0) + 1
if not counts:
    sys.exit("no message specs found in " + str(jars))
with open(out / "COUNTS.tsv", "w") as f:
    f.write("artifact\tjar\tspecs\n")
    for (artifact, jar_name), n in sorted(counts.items()):
        f.write(f"{artifact}\t{jar_name}\t{n}\n")
PY
  echo "$stamp" >"$out.tmp/.jars.sha256"
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

if [[ ! -f "$CACHE/specs/.jars.sha256" || "$(cat "$CACHE/specs/.jars.sha256")" != "$JARS_HASH" ]]; then
  extract_specs "$CACHE/jars" "$CACHE/specs" "$JARS_HASH"
fi

# 3. Harness ---------------------------------------------------------------------------------
HARNESS_HASH="$( (sha256sum "$SRC" | cut -d' ' -f1; echo "$JARS_HASH"; javac -version 2>&1) | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$CACHE/harness/OracleHarness.java.sha256" || ! -f "$CACHE/harness/.source.sha256" ||
  "$(cat "$CACHE/harness/.source.sha256")" != "$HARNESS_HASH" ]]; then
  rm -rf "$CACHE/harness.tmp"
  mkdir -p "$CACHE/harness.tmp/classes"
  run_quiet javac --release 17 -encoding UTF-8 -Xlint:-options -nowarn \
    -cp "$CACHE/jars/*" -d "$CACHE/harness.tmp/classes" "$SRC"
  echo "$HARNESS_HASH" >"$CACHE/harness.tmp/.source.sha256"
  # The Python client compares this with the source to spot a stale build.
  sha256sum "$SRC" | cut -d' ' -f1 >"$CACHE/harness.tmp/OracleHarness.java.sha256"
  rm -rf "$CACHE/harness"
  mv "$CACHE/harness.tmp" "$CACHE/harness"
fi

# 4. The previous release's specs --------------------------------------------------------------
PREVIOUS_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$PREVIOUS_POM")"
[[ -n "$PREVIOUS_VERSION" ]] || die "$PREVIOUS_POM does not set kafka.version"
PREVIOUS="$PROJECT/.cache/kafka-$PREVIOUS_VERSION"
PREVIOUS_POM_HASH="$(hash_of "$PREVIOUS_POM")"
if [[ ! -f "$PREVIOUS/specs/.jars.sha256" ||
  "$(cat "$PREVIOUS/specs/.jars.sha256")" != "$PREVIOUS_POM_HASH" ]]; then
  rm -rf "$PREVIOUS/jars"
  mkdir -p "$PREVIOUS"
  run_quiet mvn -B -q -f "$PREVIOUS_POM" \
    "-Dmaven.repo.local=$M2" \
    -DexcludeTransitive=true \
    -DoutputDirectory="$PREVIOUS/jars" \
    dependency:copy-dependencies
  ls "$PREVIOUS/jars"/kafka-clients-"$PREVIOUS_VERSION".jar >/dev/null 2>&1 ||
    die "Maven did not produce kafka-clients-$PREVIOUS_VERSION.jar"
  extract_specs "$PREVIOUS/jars" "$PREVIOUS/specs" "$PREVIOUS_POM_HASH"
fi
