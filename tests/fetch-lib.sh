# Steps the fetch scripts share (tests/oracle/fetch.sh, tests/broker/fetch.sh,
# tests/oracle/releases/fetch.sh). Sourced, not run: the caller sets FETCH_NAME (for messages)
# and M2 (Maven's local repository).

die() {
  echo "$FETCH_NAME: $*" >&2
  exit 1
}

require_tools() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not on PATH"
  done
}

lock_fetch() {
  # lock_fetch FILE: one fetch at a time (e.g. parallel CI jobs sharing a checkout).
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$1"
    flock 9
  fi
}

FETCH_LOG="$(mktemp)"
trap 'rm -f "$FETCH_LOG"' EXIT

run_quiet() {
  # Run a command, show its output only when it fails.
  if ! "$@" >"$FETCH_LOG" 2>&1; then
    cat "$FETCH_LOG" >&2
    die "command failed: $*"
  fi
}

hash_of() {
  cat "$@" | sha256sum | cut -d' ' -f1
}

copy_jars() {
  # copy_jars POM OUT_DIR JAR...: Maven copies POM's run-time class path to OUT_DIR, which must
  # then hold each JAR (a file name without .jar; globs allowed). Skipped when POM is unchanged.
  local pom="$1" out="$2" pom_hash
  shift 2
  pom_hash="$(hash_of "$pom")"
  if [[ -f "$out/.pom.sha256" && "$(cat "$out/.pom.sha256")" == "$pom_hash" ]]; then
    return
  fi
  rm -rf "$out.tmp"
  run_quiet mvn -B -q -f "$pom" \
    "-Dmaven.repo.local=$M2" \
    -DincludeScope=runtime \
    -DoutputDirectory="$out.tmp" \
    dependency:copy-dependencies
  for jar in "$@"; do
    compgen -G "$out.tmp/$jar.jar" >/dev/null || die "Maven did not produce $jar.jar"
  done
  echo "$pom_hash" >"$out.tmp/.pom.sha256"
  rm -rf "$out"
  mv "$out.tmp" "$out"
}
