#!/usr/bin/env bash
# Reruns the conformance matrix's columns with the current suite, then rebuilds
# reports/matrix.md and reports/matrix.html from every column's reports (docs/reports.md,
# "The conformance matrix"): the one command that keeps the published matrix current.
#
#   reports/matrix/rebuild.sh                      # every column below, then the pages
#   reports/matrix/rebuild.sh reference naive      # only these columns, then the pages
#   reports/matrix/rebuild.sh claude-code@2.1.340  # a Claude Code version (a new column)
#   reports/matrix/rebuild.sh claude-code@2.1.332:teams-env  # that version with agent teams on
#   reports/matrix/rebuild.sh --pages              # only the pages, from the reports as they are
#
# Columns, each run with the release binary under the strict profile:
#   reference, naive, taskproof-mcp  in-process or this binary, seconds; suite and race
#   learn-claude-code   python3 and a checkout of the lesson at LEARN_CLAUDE_CODE_DIR (default
#                       /tmp/learn-claude-code), with its .venv, as
#                       adapters/learn-claude-code/README.md sets it up; suite and race
#   task-master         node; Task Master 0.43.1 from adapters/task-master's lock file,
#                       installed into ~/.cache/taskproof/task-master-0.43.1 (as
#                       scripts/mcp-columns.sh does) unless it is there, and linked as the
#                       adapter's node_modules; suite and race
#   claude-code@V       the suite against Claude Code V in print mode (installed from npm into
#                       ~/.cache/taskproof on first use, a scripted model on 127.0.0.1), into
#                       reports/claude-code/V/run.{json,md,txt}, long strings cut as
#                       scripts/claude-code-reports.sh cuts them; its races there are that
#                       script's. Without arguments: every version of reports/claude-code that
#                       has a run.json.
#   claude-code@V:CONFIG  the same in a named configuration (docs/claude-code.md, "Configurations
#                       and agent teams"), into reports/claude-code/V:CONFIG/; its column is
#                       labelled with the configuration, as every Claude Code column is
#                       (teams-off for the default).
#   claude-code-controller@V  node and npm; the npm package claude-code-controller V (installed
#                       into the Claude Code cache on first use) through taskproof's built-in
#                       adapter; suite and race, into reports/matrix/claude-code-controller-V.
# The five MCP servers' columns are read from reports/mcp/NAME/ itself (index.json names
# ../mcp/NAME; NAME/target.json is the column's label), which reports/mcp/run.sh
# reruns; oh-my-opencode's likewise from reports/oh-my-opencode/V/, which
# reports/oh-my-opencode/run.sh V reruns (OpenCode with the plugin, ~900 MB from npm, about
# 25 min at load 10): one copy of each run, where it was made. Each command's exit status, seconds and load go to stderr; a column that fails to
# run leaves its old reports and the script goes on, exiting 1 at the end.
set -uo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q || exit 2
# A copy, so that a build during a long run does not change the binary under it.
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
cp target/release/taskproof "$bin_dir/taskproof"
export PATH="$bin_dir:$PATH"
log() { echo "== $* (load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))" >&2; }
failed=0

matrix_column() { # LABEL SPEC [matrix options...]
  local label=$1 spec=$2
  shift 2
  log "matrix column $label"
  local began=$SECONDS
  taskproof matrix --target "$spec" --label "$label=$spec" --out reports "$@" >/dev/null
  local rc=$?
  log "matrix column $label: exit $rc, $((SECONDS - began)) s"
  [ $rc -eq 0 ] || failed=1
}

# Strings longer than 2,000 characters cut, saying how much; lists never (the matrix counts
# them). scripts/claude-code-reports.sh's trim, for one file.
trim() {
  python3 - "$1" <<'PY'
import json, sys
def cut(v):
    if isinstance(v, str) and len(v) > 2000:
        return v[:2000] + f" ... [{len(v) - 2000} characters cut]"
    if isinstance(v, list):
        return [cut(x) for x in v]
    if isinstance(v, dict):
        return {k: cut(x) for k, x in v.items()}
    return v
path = sys.argv[1]
with open(path) as f:
    data = json.load(f)
with open(path, "w") as f:
    json.dump(cut(data), f, indent=1, ensure_ascii=False)
    f.write("\n")
PY
}

claude_code_column() { # VERSION
  local v=$1 out=reports/claude-code/$1
  mkdir -p "$out"
  log "claude-code@$v: run (strict, print mode)"
  local began=$SECONDS load
  load=$(cut -d' ' -f1 /proc/loadavg)
  taskproof run --target "claude-code@$v" --profile strict --jobs "${JOBS:-2}" \
    --timeout "${TIMEOUT:-60}" --color never \
    --report "json:$out/run.json.new" --report "md:$out/run.md.new" >"$out/run.txt.new" 2>&1
  local rc=$?
  log "claude-code@$v: exit $rc, $((SECONDS - began)) s"
  # 0 and 1 are verdicts; anything else leaves the old reports.
  if [ $rc -le 1 ] && [ -s "$out/run.json.new" ]; then
    for f in run.json run.md run.txt; do mv "$out/$f.new" "$out/$f"; done
    trim "$out/run.json"
    # The run's line in status.txt (scripts/claude-code-reports.sh's format), replaced.
    touch "$out/status.txt"
    grep -v '^run ' "$out/status.txt" >"$out/status.txt.new"
    echo "run $rc $((SECONDS - began)) $load $(date -u +%FT%TZ)" >>"$out/status.txt.new"
    mv "$out/status.txt.new" "$out/status.txt"
  else
    rm -f "$out"/run.*.new
    failed=1
  fi
}

column() {
  case $1 in
    reference | naive) matrix_column "$1" "$1" ;;
    taskproof-mcp)
      matrix_column taskproof-mcp 'mcp:taskproof mcp' --mapping mappings/taskproof.toml ;;
    learn-claude-code)
      local dir=${LEARN_CLAUDE_CODE_DIR:-/tmp/learn-claude-code}
      if [ ! -f "$dir/agents/s07_task_system.py" ] || [ ! -x "$dir/.venv/bin/python" ]; then
        echo "rebuild: learn-claude-code: no checkout with .venv at $dir (adapters/learn-claude-code/README.md); skipped" >&2
        failed=1
        return
      fi
      matrix_column "learn-claude-code s07" \
        "cmd:$dir/.venv/bin/python adapters/learn-claude-code/adapter.py $dir" \
        --timeout 120 --start-timeout 300 --jobs 2 ;;
    task-master)
      local tm=$HOME/.cache/taskproof/task-master-0.43.1
      if [ ! -f "$tm/node_modules/task-master-ai/dist/mcp-server.js" ]; then
        log "install Task Master 0.43.1 into $tm"
        mkdir -p "$tm"
        cp adapters/task-master/package.json adapters/task-master/package-lock.json "$tm/"
        (cd "$tm" && npm ci --silent) || { failed=1; return; }
      fi
      [ -e adapters/task-master/node_modules ] || ln -s "$tm/node_modules" adapters/task-master/node_modules
      matrix_column task-master-0.43.1 'cmd:node adapters/task-master/adapter.mjs' \
        --timeout 400 --start-timeout 300 --jobs 2 ;;
    claude-code@*) claude_code_column "${1#claude-code@}" ;;
    claude-code-controller@*)
      matrix_column "claude-code-controller-${1#claude-code-controller@}" "$1" --jobs 2 ;;
    oh-my-opencode@*)
      echo "rebuild: oh-my-opencode's column is reports/oh-my-opencode/${1#oh-my-opencode@}/: rerun it with reports/oh-my-opencode/run.sh ${1#oh-my-opencode@}, then rebuild.sh --pages" >&2
      exit 2 ;;
    *)
      echo "rebuild: unknown column $1 (reference, naive, taskproof-mcp, learn-claude-code, task-master, claude-code@VERSION, claude-code-controller@VERSION)" >&2
      exit 2 ;;
  esac
}

if [ "${1:-}" != --pages ]; then
  columns=("$@")
  if [ ${#columns[@]} -eq 0 ]; then
    columns=(reference naive taskproof-mcp learn-claude-code task-master claude-code-controller@0.3.0)
    for f in reports/claude-code/*/run.json; do
      v=${f#reports/claude-code/}
      columns+=("claude-code@${v%/run.json}")
    done
  fi
  for c in "${columns[@]}"; do column "$c"; done
fi

log "pages"
taskproof matrix --from reports/matrix --from reports/claude-code --out reports || exit 2
exit $failed
