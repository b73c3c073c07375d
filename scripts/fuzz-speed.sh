#!/bin/sh
# What starting the next case ahead saves (issue 47, item 4): for each target, ROUNDS rounds
# of the same seeded run (CASES cases, no shrinking) with the default (each case's fresh root
# and servers made while the case before runs) and with --no-prestart (today's figure before
# it: everything started inside the case), in turn A B A B, so both see the same machine.
# Writes reports/fuzz-speed.md: per target the median wall time of each and the ratio of the
# medians, with the load at the start and the end.
#
#   scripts/fuzz-speed.sh [NAME...]    # default: dex ohno-mcp mcp-shrimp-task-manager reference
#
# TASKPROOF (default target/release/taskproof), CASES (default 10), ROUNDS (default 3), SEED
# (default 1). The MCP servers must be installed as for scripts/fuzz-recall.sh.
set -u
cd "$(dirname "$0")/.."
TP=${TASKPROOF:-target/release/taskproof}
CASES=${CASES:-10}
ROUNDS=${ROUNDS:-3}
SEED=${SEED:-1}
# shellcheck source=mcp-servers.sh
. scripts/mcp-servers.sh
OUT=reports/fuzz-speed.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

args_of() {
  case $1 in
    dex|ohno-mcp|mcp-shrimp-task-manager)
      echo "--target|mcp:$(mcp_command "$1")|--mapping|mappings/$1.toml" ;;
    reference) echo "--target|cmd:$TP serve --no-fsync" ;;
    *) echo "unknown target $1" >&2; exit 2 ;;
  esac
}

# One run; prints its wall seconds (from the JSON report) and its start/answer split.
one() {
  name=$1; shift
  rm -rf "$work/out" "$work/r.json"
  "$TP" fuzz "$@" --cases "$CASES" --seed "$SEED" --shrink-runs 0 --color never \
    --out "$work/out" --report "json:$work/r.json" > "$work/last.txt" 2>&1
  if [ ! -s "$work/r.json" ]; then
    echo "fuzz-speed: $name: the run wrote no report; its last lines:" >&2
    tail -n 5 "$work/last.txt" >&2
    exit 1
  fi
  python3 -c '
import json,sys
r=json.load(open(sys.argv[1])); c=r["coverage"]
print(r["duration_ms"]/1000, c["start_ms"]/1000, c["cases_ms"]/1000, c["requests_ms"]/1000, r["cases"])
' "$work/r.json"
}

{
  echo "# What starting cases ahead saves"
  echo
  echo "Made by \`scripts/fuzz-speed.sh\` on $(date -u +%Y-%m-%dT%H:%MZ): each target's seeded"
  echo "run of $CASES cases (seed $SEED, no shrinking), $ROUNDS rounds, the default (next case's"
  echo "root and servers made while a case runs) and \`--no-prestart\` (everything started inside"
  echo "the case, as before) in turn. Times are wall seconds of the whole run; *start* is the time"
  echo "spent starting the target in fresh roots, *in cases* the time from each case's start to its"
  echo "end (answers included). 2 cores; the load is /proc/loadavg."
  echo
  echo "| target | load at start | --no-prestart (median s) | default (median s) | default / --no-prestart | start s (no-prestart / default) | in cases s (no-prestart / default) |"
  echo "|---|---|---|---|---|---|---|"
} > "$OUT.tmp"

for name in ${@:-dex ohno-mcp mcp-shrimp-task-manager reference}; do
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  old_ifs=$IFS; IFS='|'
  # shellcheck disable=SC2046
  set -- $(args_of "$name")
  IFS=$old_ifs
  : > "$work/a"; : > "$work/b"
  i=0
  while [ $i -lt "$ROUNDS" ]; do
    one "$name" "$@" --no-prestart >> "$work/a"
    one "$name" "$@" >> "$work/b"
    i=$((i + 1))
  done
  python3 - "$name" "$load" "$work/a" "$work/b" >> "$OUT.tmp" <<'PY'
import statistics, sys
name, load, a, b = sys.argv[1:5]
rows = lambda p: [list(map(float, l.split())) for l in open(p) if l.strip()]
A, B = rows(a), rows(b)
med = lambda rs, i: statistics.median(r[i] for r in rs)
print(f"| {name} | {load} | {med(A,0):.1f} | {med(B,0):.1f} | {med(B,0)/med(A,0):.2f} "
      f"| {med(A,1):.1f} / {med(B,1):.1f} | {med(A,2):.1f} / {med(B,2):.1f} |")
PY
  echo "== $name done" >&2
done
echo >> "$OUT.tmp"
echo "Load at the end: $(cut -d' ' -f1-3 /proc/loadavg)." >> "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
