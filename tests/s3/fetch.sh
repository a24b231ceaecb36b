#!/usr/bin/env bash
# Fetch the S3-compatible server of the object-storage tests: s3proxy (Apache-2.0, Java, Maven
# Central org.gaul:s3proxy, its jar with dependencies), serving a local folder over the S3 API
# with AWS v2/v4 signatures. The tests start it on a free port of 127.0.0.1 and stop it by its
# process id (tests/s3server.py).
#
#   tests/s3/fetch.sh
#
# Produces <project>/.cache/s3proxy/s3proxy-<version>-jar-with-dependencies.jar. Idempotent:
# nothing to do when the jar is there.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../.." && pwd)"
VERSION="4.1.0"
CACHE="$PROJECT/.cache/s3proxy"
M2="$PROJECT/.cache/m2"
JAR="s3proxy-$VERSION-jar-with-dependencies.jar"

FETCH_NAME="s3 fetch.sh"
# shellcheck source=../fetch-lib.sh
source "$HERE/../fetch-lib.sh"

require_tools mvn
mkdir -p "$CACHE" "$M2"
lock_fetch "$CACHE/.fetch.lock"
if [[ -f "$CACHE/$JAR" ]]; then
  exit 0
fi
run_quiet mvn -B -q "-Dmaven.repo.local=$M2" dependency:copy \
  "-Dartifact=org.gaul:s3proxy:$VERSION:jar:jar-with-dependencies" \
  "-DoutputDirectory=$CACHE.tmp"
[[ -f "$CACHE.tmp/$JAR" ]] || die "Maven did not produce $JAR"
mv "$CACHE.tmp/$JAR" "$CACHE/$JAR"
rm -rf "$CACHE.tmp"
