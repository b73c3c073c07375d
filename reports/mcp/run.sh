#!/bin/sh
# Makes the reports of reports/mcp/NAME/ for the five MCP task servers with shipped mappings:
# the strict suite (run.json, run.md, run.txt) and the race (race.txt, race-WORKLOAD.json per
# workload, so that a workload whose final listing fails leaves the others' reports).
#
#   reports/mcp/run.sh [NAME...]      # default: all five; needs the servers installed (the
#                                     # head of each mappings/NAME.toml says how)
#
# TASKPROOF (default: taskproof on PATH) is the binary; RACE="--writers 4 --ops 20 --seed 1"
# the race's size.
set -u
cd "$(dirname "$0")/../.."
TP=${TASKPROOF:-taskproof}
RACE=${RACE:---writers 4 --ops 20 --seed 1}
# shellcheck source=../../scripts/mcp-servers.sh
. scripts/mcp-servers.sh

command_of() {
  mcp_command "$1" || { echo "unknown server $1" >&2; exit 2; }
}

for name in ${@:-dex mcp-taskmanager ohno-mcp task-orchestrator mcp-shrimp-task-manager}; do
  out=reports/mcp/$name
  target="mcp:$(command_of "$name")"
  echo "== $name: run" >&2
  "$TP" run --target "$target" --mapping "mappings/$name.toml" --color never \
    --report "json:$out/run.json" --report "md:$out/run.md" > "$out/run.txt" 2>&1
  : > "$out/race.txt"
  rm -f "$out"/race-*.json
  # The workloads whose parts the mapping declares (fields changes owner and activeForm,
  # metadata metadata, claim claims: none of the five has them; kazuph has no edges).
  # ohno has no edges at creation, which complete's seeds need.
  case $name in
    mcp-taskmanager) workloads="create" ;;
    ohno-mcp) workloads="create edges" ;;
    *) workloads="create edges complete" ;;
  esac
  for w in $workloads; do
    echo "== $name: race $w" >&2
    # shellcheck disable=SC2086
    "$TP" race --target "$target" --mapping "mappings/$name.toml" --workload "$w" $RACE \
      --report "json:$out/race-$w.json" >> "$out/race.txt" 2>&1
    echo "(exit status $?)" >> "$out/race.txt"
    echo >> "$out/race.txt"
  done
done
