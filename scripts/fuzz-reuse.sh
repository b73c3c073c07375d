#!/bin/sh
# What sharing one root between cases saves (issue 53, item 2): for each target, ROUNDS rounds
# of the same seeded run (CASES cases, no shrinking, the parallel part on as by default) with
# the default (a target that declares lists keeps one root and its sessions, each case on lists
# of its own; an mcp: server per list is emptied and reused) and with --fresh-root-per-case
# (the mode before it: a fresh root and fresh sessions per case, the next made while a case
# runs), in turn A B A B, so both see the same machine. Writes reports/fuzz-reuse.md: per
# target the median cases per second of each and their ratio, with the load at the start and
# the end.
#
#   scripts/fuzz-reuse.sh [NAME...]    # default: reference dex ohno-mcp mcp-taskmanager
#                                      #   task-orchestrator mcp-shrimp-task-manager
#
# TASKPROOF (default target/release/taskproof), CASES (default 40), ROUNDS (default 3), SEED
# (default 1). The MCP servers must be installed as for scripts/fuzz-recall.sh; a missing one
# is a row saying so.
set -u
cd "$(dirname "$0")/.."
TP=${TASKPROOF:-target/release/taskproof}
CASES=${CASES:-40}
ROUNDS=${ROUNDS:-3}
SEED=${SEED:-1}
# shellcheck source=mcp-servers.sh
. scripts/mcp-servers.sh
OUT=reports/fuzz-reuse.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

args_of() {
  case $1 in
    reference) echo "--target|cmd:$TP serve --no-fsync" ;;
    *) echo "--target|mcp:$(mcp_command "$1")|--mapping|mappings/$1.toml" ;;
  esac
}

# One run; prints cases per second (cases over the run's wall time, from the JSON report)
# and whether the root was shared.
one() {
  name=$1; shift
  rm -rf "$work/out" "$work/r.json"
  "$TP" fuzz "$@" --cases "$CASES" --seed "$SEED" --shrink-runs 0 --replays 1 --color never \
    --out "$work/out" --report "json:$work/r.json" > "$work/last.txt" 2>&1
  if [ ! -s "$work/r.json" ]; then
    echo "fuzz-reuse: $name: the run wrote no report; its last lines:" >&2
    tail -n 5 "$work/last.txt" >&2
    return 1
  fi
  python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))
c=r.get("coverage",{})
print(r["cases"]/max(r["duration_ms"]/1000,1e-9), int(r.get("reused_root", False)),
      r["cases"]/max((c.get("cases_ms",0)+c.get("start_ms",0))/1000,1e-9))
' "$work/r.json"
}

{
  echo "# What sharing a root between fuzz cases saves"
  echo
  echo "Made by \`scripts/fuzz-reuse.sh\` on $(date -u +%Y-%m-%dT%H:%MZ): each target's seeded"
  echo "run of $CASES cases (seed $SEED, no shrinking, one replay per finding, parallel part on),"
  echo "$ROUNDS rounds, \`--fresh-root-per-case\` (a fresh root and sessions per case, the next"
  echo "made ahead: the mode before issue 53) and the default (one root and its sessions for every"
  echo "case, each on lists of its own) in turn. *Wall* is cases over the run's wall time, findings'"
  echo "replays (each a fresh sandbox, as \`taskproof run\` would) included; *cases* is cases over the"
  echo "time spent starting targets for cases and running them (the run's \`time:\` line), which is"
  echo "what a case costs. 2 cores; the load is /proc/loadavg."
  echo
  echo "| target | load at start | fresh root per case: wall / cases (median cases/s) | shared root: wall / cases (median cases/s) | shared / fresh (cases) | root shared |"
  echo "|---|---|---|---|---|---|"
} > "$OUT.tmp"

for name in ${@:-reference dex ohno-mcp mcp-taskmanager task-orchestrator mcp-shrimp-task-manager}; do
  if [ "$name" != reference ]; then
    p=$(mcp_command "$name" | cut -d' ' -f1)
    if [ ! -e "$p" ]; then
      echo "| $name | | not run: $p is missing | | | |" >> "$OUT.tmp"
      continue
    fi
  fi
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  old_ifs=$IFS; IFS='|'
  # shellcheck disable=SC2046
  set -- $(args_of "$name")
  IFS=$old_ifs
  : > "$work/a"; : > "$work/b"
  i=0
  while [ $i -lt "$ROUNDS" ]; do
    one "$name" "$@" --fresh-root-per-case >> "$work/a" || break
    one "$name" "$@" >> "$work/b" || break
    i=$((i + 1))
  done
  python3 - "$name" "$load" "$work/a" "$work/b" >> "$OUT.tmp" <<'PY'
import statistics, sys
name, load, a, b = sys.argv[1:5]
rows = lambda p: [list(map(float, l.split())) for l in open(p) if l.strip()]
A, B = rows(a), rows(b)
if not A or not B:
    print(f"| {name} | {load} | no complete round (see the script's stderr) | | | |")
    sys.exit()
med = lambda rs, i: statistics.median(r[i] for r in rs)
print(f"| {name} | {load} | {med(A,0):.2f} / {med(A,2):.2f} | {med(B,0):.2f} / {med(B,2):.2f} | {med(B,2)/med(A,2):.1f} | {'yes' if med(B,1) else 'no'} |")
PY
  echo "== $name done" >&2
done
echo >> "$OUT.tmp"
echo "Load at the end: $(cut -d' ' -f1-3 /proc/loadavg)." >> "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
