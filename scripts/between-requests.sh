#!/usr/bin/env bash
# What happens between requests, per published version of Claude Code: the nothing-vanishes
# scenarios (waits, /clear, /compact, /exit and --resume, two sessions on one list) in the
# terminal UI, and a mixed race of the reference store and Claude Code's terminal UI on one
# list that finishes it, with a settle phase. Writes reports/claude-code/VERSION/:
#   between-requests.{txt,json}   taskproof run --filter 'nothing-vanishes*'
#   race-finish-settle.{txt,json} taskproof race --target reference --target claude-code@V
#                                 --drive terminal --workload finish --writers 1 --ops 2
# and appends each command's exit status, seconds and load average to VERSION/status.txt.
#
#   scripts/between-requests.sh 2.1.17 2.1.112 2.1.211 2.1.332
#
# Exit status 1 of a command means the version was found wanting (a task vanished), 3 a
# target error to look at.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 VERSION..." >&2; exit 2; }
# TASKPROOF_BIN: a taskproof binary to use instead of building one.
if [ -n "${TASKPROOF_BIN:-}" ]; then
  bin=$TASKPROOF_BIN
else
  cargo build --release --locked -q || exit 2
  bin=./target/release/taskproof
fi
for v in "$@"; do
  out=reports/claude-code/$v
  mkdir -p "$out"
  step() {
    local name=$1; shift
    local start=$SECONDS
    "$@" >"$out/$name.txt" 2>"$out/$name.stderr"
    local code=$?
    [ -s "$out/$name.stderr" ] || rm -f "$out/$name.stderr"
    printf '%s %s %s %s %s\n' "$name" "$code" "$((SECONDS - start))" \
      "$(cut -d' ' -f1 /proc/loadavg)" "$(date -u +%Y-%m-%dT%H:%MZ)" >>"$out/status.txt"
    echo "$v $name: exit $code in $((SECONDS - start)) s"
  }
  step between-requests "$bin" run --target "claude-code@$v" --filter 'nothing-vanishes*' \
    --report "json:$out/between-requests.json"
  step race-finish-settle "$bin" race --target reference --target "claude-code@$v" \
    --drive terminal --workload finish --writers 1 --ops 2 --seed 1 \
    --report "json:$out/race-finish-settle.json"
done
