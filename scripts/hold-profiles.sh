#!/usr/bin/env bash
# Holds real stores to the profiles recorded from them (docs/profiles.md, "Held to their
# recordings"): for each profile named (default: every file in profiles/), runs
#
#   taskproof run <the profile's scenarios> --target <its recorded target> --profile NAME \
#     --jobs 2 --keep-going
#
# and keeps the terminal, JSON and Markdown reports (and stderr, when the run wrote any) with a
# status line (exit status, seconds, load average before and after) in
# reports/profiles/holds/DATE-NAME.*, DATE being today's UTC date. A hold passes when every recorded scenario passes; a difference is a failure
# (exit 1), a target that breaks the protocol or times out an error (exit 3).
#
#   scripts/hold-profiles.sh                                # every recorded profile
#   scripts/hold-profiles.sh claude-code-2.1.21 task-master-0.43.1
#   TIMEOUT=400 scripts/hold-profiles.sh task-master-0.43.1
#   TARGET=claude-code@2.1.20 scripts/hold-profiles.sh claude-code-2.1.21
#                          # another target held to a recording: what changed between them
#                          # (written to DATE-claude-code-2.1.20-held-to-2.1.21.*)
#
# What each target needs, installed the way its users install it:
# - claude-code-*: node and npm; the version is fetched into the cache on first use.
# - task-master-*: `(cd adapters/task-master && npm ci)`.
# - learn-claude-code-s07: a checkout of the revision adapters/learn-claude-code/README.md
#   names, in LEARN_CLAUDE_CODE_DIR, with its requirements importable by
#   LEARN_CLAUDE_CODE_PYTHON (default: $LEARN_CLAUDE_CODE_DIR/.venv/bin/python).
#
# TASKPROOF names the binary (default: a release build of this checkout), HOLDS_DIR the
# folder for the reports (default: reports/profiles/holds). TIMEOUT and
# START_TIMEOUT override the per-target defaults below, which leave room for a loaded
# 2-core machine: Claude Code 2.1.17's terminal UI and Task Master's MCP server are slow to
# start.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TASKPROOF:-}" ]; then
  cargo build --release --quiet || exit 2
  TASKPROOF=target/release/taskproof
fi
out_dir=${HOLDS_DIR:-reports/profiles/holds}
mkdir -p "$out_dir"
day=$(date -u +%F)

if [ $# -eq 0 ]; then
  set -- $(for f in profiles/*.json; do basename "$f" .json; done)
fi

summary=()
worst=0
for name in "$@"; do
  file=profiles/$name.json
  if [ ! -f "$file" ]; then
    echo "hold-profiles: no recorded profile $file" >&2
    worst=2
    continue
  fi
  # The recorded target and the scenarios the profile records, from the file itself.
  readarray -t meta < <(python3 - "$file" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
print(p["recorded"]["target"])
print(p["recorded"].get("mapping", ""))
for s in sorted(p["scenarios"]):
    print(f"scenarios/{s}.json")
PY
  ) || { echo "hold-profiles: $file: not a recorded profile" >&2; worst=2; continue; }
  target=${meta[0]}
  # An mcp: target's mapping file, as recorded (a path from the repository's top).
  mapping=()
  [ -n "${meta[1]}" ] && mapping=(--mapping "${meta[1]}")
  scenarios=("${meta[@]:2}")
  timeout=120 start=120
  case $name in
    claude-code-2.1.17) start=400 ;;
    task-master-*-mcp)
      tm=$HOME/.cache/taskproof/task-master-0.43.1/node_modules/task-master-ai/dist/mcp-server.js
      target="mcp:node $tm"
      timeout=400 start=300 ;;
    task-master-*) timeout=400 start=300 ;;
    learn-claude-code-*)
      if [ -z "${LEARN_CLAUDE_CODE_DIR:-}" ]; then
        echo "hold-profiles: $name needs LEARN_CLAUDE_CODE_DIR (adapters/learn-claude-code/README.md); skipped" >&2
        summary+=("$name: skipped, LEARN_CLAUDE_CODE_DIR unset")
        continue
      fi
      python=${LEARN_CLAUDE_CODE_PYTHON:-$LEARN_CLAUDE_CODE_DIR/.venv/bin/python}
      target="cmd:$python adapters/learn-claude-code/adapter.py $LEARN_CLAUDE_CODE_DIR"
      start=300 ;;
  esac
  timeout=${TIMEOUT:-$timeout}
  start=${START_TIMEOUT:-$start}
  base=$out_dir/$day-$name
  if [ -n "${TARGET:-}" ]; then
    target=$TARGET
    base=$out_dir/$day-$(echo "$TARGET" | tr -c 'A-Za-z0-9.\n' '-')-held-to-${name#claude-code-}
  fi
  load0=$(cut -d' ' -f1 /proc/loadavg)
  began=$(date -u +%FT%TZ)
  t0=$SECONDS
  echo "== $name: ${#scenarios[@]} scenarios against $target"
  "$TASKPROOF" run "${scenarios[@]}" --target "$target" "${mapping[@]}" --profile "$name" --jobs 2 \
    --keep-going --timeout "$timeout" --start-timeout "$start" --color never \
    --report "json:$base.json" --report "md:$base.md" > "$base.txt" 2> "$base.stderr"
  rc=$?
  # A run that wrote nothing to stderr keeps no .stderr: an empty file says nothing, and
  # every such file would be a copy of every other (reports/README.md).
  [ -s "$base.stderr" ] || rm -f "$base.stderr"
  status="started $began target $target profile $name exit $rc seconds $((SECONDS - t0)) load $load0 to $(cut -d' ' -f1 /proc/loadavg) args: --timeout $timeout --start-timeout $start"
  echo "$status" > "$base.status"
  echo "$status"
  tail -n 1 "$base.txt"
  summary+=("$name: exit $rc, $(tail -n 1 "$base.txt")")
  [ "$rc" -gt "$worst" ] && worst=$rc
  # A report byte for byte the one an earlier day's hold of the same name kept is not kept
  # twice (reports/README.md): the .status names the earlier file instead.
  python3 scripts/lib/keep_once.py --hold "$base"
done

echo
printf '%s\n' "${summary[@]}"
exit "$worst"
