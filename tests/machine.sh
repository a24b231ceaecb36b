#!/usr/bin/env bash
# The tools `make test` needs from the machine, beside what `make setup` fetches itself:
#
#   tests/machine.sh check     say which tools are there, and for each missing one the command
#                              that installs it; exits 1 when Java or Maven is missing (the
#                              set-up cannot go on), and under CI=true when any tool is missing
#                              (its tests would skip)
#   tests/machine.sh install   install the missing ones with apt-get (as root, e.g. a fresh CI
#                              machine: .ci/run), then check
#
# Java 17 and Maven fetch and run Kafka's jars (the oracle, broker and Spark tests); a C compiler
# builds the native engine (without it the native tests skip and reads are pure Python);
# Chromium renders the HTML lag report in its test (without it that test skips).
set -euo pipefail

MODE="${1:-check}"
# tool: Debian package, what needs it
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

if [[ "$MODE" == install ]]; then
  mapfile -t wanted < <(missing_packages)
  if ((${#wanted[@]})); then
    if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
      echo "machine: missing ${wanted[*]}; install them as root: apt-get install -y ${wanted[*]}" >&2
      exit 1
    fi
    echo "machine: apt-get install -y ${wanted[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wanted[@]}" >/dev/null
  fi
  MODE=check
fi
[[ "$MODE" == check ]] || { echo "usage: $0 check|install" >&2; exit 2; }

fatal=0
skips=0
report() {
  # report TOOL PACKAGE WHAT-NEEDS-IT FATAL
  if has "$1"; then
    printf '  %-9s %s\n' "$1" "$(command -v "$1" || command -v chromium-browser)"
    return
  fi
  printf '  %-9s MISSING: %s; install: sudo apt-get install -y %s\n' "$1" "$3" "$2"
  if [[ "$4" == 1 ]]; then fatal=1; else skips=1; fi
}

echo "machine: the tools the tests need (tests/machine.sh)"
report java openjdk-17-jdk-headless "Spark and Kafka's jars need Java 17" 1
report javac openjdk-17-jdk-headless "the oracle and broker harnesses are compiled" 1
report mvn maven "fetches Kafka's jars" 1
report cc gcc "builds the native engine (its tests skip without it)" 0
report chromium chromium "renders the HTML lag report in its test (skips without it)" 0
major="$(has java && java_major || true)"
if [[ -n "$major" ]] && ((major < 17)); then
  echo "  java is version $major; Spark 4 needs Java 17 or newer (set JAVA_HOME)"
  fatal=1
fi
if ((fatal)); then
  echo "machine: install the tools marked MISSING, then run make setup again" >&2
  exit 1
fi
if ((skips)) && [[ "${CI:-}" == true ]]; then
  echo "machine: CI=true and a tool is missing: its tests would skip (run tests/machine.sh install)" >&2
  exit 1
fi
