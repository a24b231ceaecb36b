#!/usr/bin/env bash
# The tools `make test` needs from the machine, beside what `make setup` fetches itself:
#
#   tests/machine.sh check     say which tools are there and, for each missing one, the command
#                              that installs it; exit 1 when one is missing (its tests would
#                              fail or skip), unless ALLOW_MISSING names it
#   tests/machine.sh install   install the missing ones with apt-get where this user can (as
#                              root, or through sudo without a password: `make setup` does
#                              this), then check; where it cannot, check says what to run
#
# Java 17 and Maven fetch and run Kafka's jars (the oracle, broker and Spark tests); a C compiler
# builds the native engine (without it the native tests skip and reads are pure Python);
# Chromium renders the HTML lag report in its test and the README's screenshot.
# ALLOW_MISSING="cc chromium" accepts those two missing: their tests skip (never under CI=true,
# where a skip fails). Java, javac and Maven cannot be spared.
set -euo pipefail

MODE="${1:-check}"
ALLOW_MISSING="${ALLOW_MISSING:-}"
# tool: Debian package
PACKAGES=(java:openjdk-17-jdk-headless javac:openjdk-17-jdk-headless mvn:maven cc:gcc
  chromium:chromium)

has() {
  case "$1" in
    chromium) command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

java_major() {
  # "openjdk version "17.0.15" 2025-04-15" -> 17; "1.8.0_392" -> 8
  local version
  version="$(java -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)"
  version="${version#1.}"
  echo "${version%%[.+-]*}"
}

missing_packages() {
  local entry tool
  for entry in "${PACKAGES[@]}"; do
    tool="${entry%%:*}"
    has "$tool" || echo "${entry#*:}"
  done | sort -u
}

# How this user runs apt-get: directly as root, or through sudo that asks no password.
as_root() {
  if [[ "$(id -u)" == 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    return 1
  fi
}

if [[ "$MODE" == install ]]; then
  mapfile -t wanted < <(missing_packages)
  if ((${#wanted[@]})); then
    if command -v apt-get >/dev/null 2>&1 && as_root true; then
      echo "machine: installing ${wanted[*]} (apt-get; Chromium takes a minute or two)"
      as_root apt-get update -qq >/dev/null
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wanted[@]}" >/dev/null
    else
      echo "machine: ${wanted[*]} missing, and this user cannot install them (not root, no" \
        "sudo without a password, or no apt-get)"
    fi
  fi
  MODE=check
fi
[[ "$MODE" == check ]] || { echo "usage: $0 check|install" >&2; exit 2; }

fatal=0
report() {
  # report TOOL PACKAGE WHAT-NEEDS-IT SPARABLE
  if has "$1"; then
    printf '  %-9s %s\n' "$1" "$(command -v "$1" || command -v chromium-browser)"
    return
  fi
  if [[ "$4" == 1 && " $ALLOW_MISSING " == *" $1 "* && "${CI:-}" != true ]]; then
    printf '  %-9s missing, allowed (ALLOW_MISSING): %s\n' "$1" "$3"
    return
  fi
  printf '  %-9s MISSING: %s; install: sudo apt-get install -y %s\n' "$1" "$3" "$2"
  fatal=1
}

echo "machine: the tools the tests need (tests/machine.sh)"
report java openjdk-17-jdk-headless "Spark and Kafka's jars need Java 17" 0
report javac openjdk-17-jdk-headless "the oracle and broker harnesses are compiled" 0
report mvn maven "fetches Kafka's jars" 0
report cc gcc "builds the native engine (its tests skip without it)" 1
report chromium chromium "renders the HTML lag report in its test (it skips without it)" 1
major="$(has java && java_major || true)"
if [[ -n "$major" ]] && ((major < 17)); then
  echo "  java is version $major; Spark 4 needs Java 17 or newer (set JAVA_HOME)"
  fatal=1
fi
if ((fatal)); then
  echo "machine: install the tools marked MISSING, then run make setup again" \
    "(ALLOW_MISSING=\"cc chromium\" lets those two be missing: their tests skip)" >&2
  exit 1
fi
