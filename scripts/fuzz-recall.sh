#!/bin/sh
# Issue 47's recall table: `taskproof fuzz` with one budget against every real target taskproof
# has, and reports/fuzz-recall.md built from the runs and the suite's checked-in reports.
#
#   scripts/fuzz-recall.sh [NAME...]    # default: every target below
#
# Concurrent cases are on (fuzz's default): the table has a column for what they found.
#
# BUDGET (seconds, default 240) is each run's --time-limit: no case starts after it, shrinking
# and replays included (a finding met late is still shrunk and replayed, so a run can end a
# little after it). SEED (default 1) and SHRINK (the --shrink-time, default 20) are the same for
# every target. TASKPROOF (default target/release/taskproof) is the binary.
#
# What each target needs installed (nothing is installed here but the Claude Code versions,
# which taskproof installs from npm into its cache on first use):
# - the five MCP servers: the head of each mappings/NAME.toml (reports/mcp/run.sh's paths);
# - task-master: (cd adapters/task-master && npm ci);
# - learn-claude-code: a checkout in LEARN_CLAUDE_CODE_DIR (adapters/learn-claude-code/README.md).
# A target whose program is missing is reported as not run, with why, and the others go on.
set -u
cd "$(dirname "$0")/.."
TP=${TASKPROOF:-target/release/taskproof}
BUDGET=${BUDGET:-240}
SEED=${SEED:-1}
SHRINK=${SHRINK:-20}
# How often a concurrent finding's scenario is replayed (its rate is in the table).
REPLAYS=${REPLAYS:-10}
# shellcheck source=mcp-servers.sh
. scripts/mcp-servers.sh
LCC=${LEARN_CLAUDE_CODE_DIR:-/tmp/learn-claude-code}
OUT=reports/fuzz-recall

# NAME -> the fuzz arguments of its target; the program it needs, to check first.
target_of() {
  case $1 in
    dex|mcp-taskmanager|ohno-mcp|task-orchestrator|mcp-shrimp-task-manager)
      echo "--target|mcp:$(mcp_command "$1")|--mapping|mappings/$1.toml" ;;
    task-master) echo "--target|cmd:node adapters/task-master/adapter.mjs|--timeout|400" ;;
    learn-claude-code) echo "--target|cmd:$LCC/.venv/bin/python adapters/learn-claude-code/adapter.py $LCC|--profile|strict|--timeout|120" ;;
    # Print mode: --settle 0 keeps the sessions in print mode (a settle phase drives the
    # terminal UI, docs/fuzzing.md); what vanishes between requests is the settle run's.
    claude-code-2.1.112) echo "--target|claude-code@2.1.112:teams-off|--profile|strict|--settle|0|--timeout|60" ;;
    claude-code-2.1.332) echo "--target|claude-code@2.1.332:teams-off|--profile|strict|--settle|0|--timeout|60" ;;
    claude-code-controller) echo "--target|claude-code-controller@0.3.0|--timeout|60" ;;
    oh-my-opencode) echo "--target|oh-my-opencode@4.19.4|--settle|0|--timeout|150" ;;
    *) echo "unknown target $1" >&2; exit 2 ;;
  esac
}

missing() {
  case $1 in
    dex|mcp-taskmanager|ohno-mcp|task-orchestrator|mcp-shrimp-task-manager)
      p=$(mcp_command "$1" | cut -d' ' -f1) ;;
    task-master) p=adapters/task-master/node_modules ;;
    learn-claude-code) p=$LCC/.venv/bin/python ;;
    *) return 1 ;;
  esac
  [ -e "$p" ] && return 1
  echo "$p"
}

ALL="dex mcp-taskmanager ohno-mcp task-orchestrator mcp-shrimp-task-manager learn-claude-code task-master claude-code-2.1.112 claude-code-2.1.332 claude-code-controller oh-my-opencode"
for name in ${@:-$ALL}; do
  dir=$OUT/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  if p=$(missing "$name"); then
    echo "not run: $p is missing" > "$dir/not-run.txt"
    echo "== $name: not run ($p is missing)" >&2
    continue
  fi
  echo "== $name: fuzz for $BUDGET s (seed $SEED)" >&2
  {
    echo "load at start: $(cat /proc/loadavg)"
    echo "budget: --time-limit $BUDGET --seed $SEED --shrink-time $SHRINK"
  } > "$dir/load.txt"
  old_ifs=$IFS; IFS='|'
  # shellcheck disable=SC2046
  set -- $(target_of "$name")
  IFS=$old_ifs
  "$TP" fuzz "$@" --cases 100000 --time-limit "$BUDGET" --seed "$SEED" \
    --shrink-time "$SHRINK" --replays "$REPLAYS" --color never --out "$dir/findings" \
    --report "json:$dir/fuzz.json" > "$dir/fuzz.txt" 2>&1
  echo "exit status $?" >> "$dir/fuzz.txt"
  # A finding another run keeps byte for byte is kept once (reports/README.md).
  python3 scripts/lib/keep_once.py "$dir/findings"
  echo "load at end: $(cat /proc/loadavg)" >> "$dir/load.txt"
done
python3 scripts/fuzz_recall_table.py > reports/fuzz-recall.md
