#!/usr/bin/env bash
# Fetch the Kafka releases the replay tests run and compile their replay harness, as a user's
# first replay would: python -m codegen.forensics.replay fetch, with the project's caches.
#
#   tests/replay/fetch.sh          the releases of tests/replay/releases.txt (make setup)
#   tests/replay/fetch.sh --all    every release codegen/forensics/replay/jars.json lists
#                                  (make test-replay-matrix)
#
# Jars go to <project>/.cache/kafka-specgen/maven (Maven's layout); those Maven already holds in
# <project>/.cache/m2 are read from there. Each jar is checked against its SHA-256 in jars.json.
# Idempotent: what is there is not fetched or compiled again. Quiet on success.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../.." && pwd)"
FETCH_NAME="replay fetch.sh"
# shellcheck source=../fetch-lib.sh
source "$HERE/../fetch-lib.sh"

require_tools java javac
PYTHON="$PROJECT/.venv/bin/python"
[[ -x "$PYTHON" ]] || die "run make python-setup first ($PYTHON is missing)"
export KAFKA_SPECGEN_CACHE="$PROJECT/.cache/kafka-specgen"
export KAFKA_SPECGEN_MAVEN_REPOS="$PROJECT/.cache/m2"
mkdir -p "$KAFKA_SPECGEN_CACHE"
lock_fetch "$KAFKA_SPECGEN_CACHE/.fetch.lock"

if [[ "${1:-}" == "--all" ]]; then
  run_quiet "$PYTHON" -m codegen.forensics.replay fetch --all
else
  mapfile -t releases < <(grep -v '^#' "$HERE/releases.txt" | grep .)
  run_quiet "$PYTHON" -m codegen.forensics.replay fetch "${releases[@]}"
fi
