#!/usr/bin/env bash
# One phase of `make test`: says what it runs, runs it, says how long it took, and keeps the
# time for the run's closing table.
#
#   tests/phase.sh begin                  start a run (forget the last run's phases)
#   tests/phase.sh "NAME" COMMAND [ARG...] run one phase; its exit status is the command's
#   tests/phase.sh end                    print every phase of the run with its time
set -uo pipefail

LOG="${PHASE_LOG:-.cache/test-phases.tsv}"

clock() {
  printf '%dm %02ds' $(($1 / 60)) $(($1 % 60))
}

case "${1:-}" in
  begin)
    mkdir -p "$(dirname "$LOG")"
    date +%s >"$LOG"
    exit 0
    ;;
  end)
    [[ -f "$LOG" ]] || exit 0
    total=$(($(date +%s) - $(head -n 1 "$LOG")))
    echo
    echo "=== make test: every phase passed"
    tail -n +2 "$LOG" | while IFS=$'\t' read -r took name; do
      printf '  %-52s %s\n' "$name" "$(clock "$took")"
    done
    printf '  %-52s %s\n' "total" "$(clock "$total")"
    exit 0
    ;;
  "")
    echo "usage: $0 begin | NAME COMMAND [ARG...] | end" >&2
    exit 2
    ;;
esac

name="$1"
shift
echo
echo "=== $name"
echo "    $*"
start=$(date +%s)
"$@"
status=$?
took=$(($(date +%s) - start))
if ((status == 0)); then
  echo "=== $name: passed in $(clock "$took")"
  [[ -f "$LOG" ]] && printf '%s\t%s\n' "$took" "$name" >>"$LOG"
else
  echo "=== $name: FAILED (exit status $status) after $(clock "$took")"
fi
exit "$status"
