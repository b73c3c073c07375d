#!/usr/bin/env bash
# The MCP targets' recorded profiles and matrix columns (issue 26): `taskproof serve mcp` through
# mappings/taskproof.toml and Task Master's MCP server through mappings/task-master.toml.
# Task Master 0.43.1 is installed as mappings/task-master.toml says, into
# ~/.cache/taskproof/task-master-0.43.1 (outside the repository), unless it is there.
#
#   scripts/mcp-columns.sh            # both
#   scripts/mcp-columns.sh taskproof  # only `taskproof serve mcp`
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
cargo build --release --quiet
export PATH="$PWD/target/release:$PATH"
log() { echo "== $* (load: $(cut -d' ' -f1-3 /proc/loadavg))"; }

if [ "$which" = all ] || [ "$which" = taskproof ]; then
  t='mcp:taskproof serve mcp'
  log "record $t"
  taskproof profile record --target "$t" --mapping mappings/taskproof.toml --name taskproof-mcp \
    --out profiles/taskproof-mcp.json
  log "matrix column $t"
  taskproof maint matrix --target "$t" --mapping mappings/taskproof.toml \
    --label "taskproof-mcp=$t" --out reports
fi

if [ "$which" = all ] || [ "$which" = task-master ]; then
  tm="$HOME/.cache/taskproof/task-master-0.43.1"
  if [ ! -f "$tm/node_modules/task-master-ai/dist/mcp-server.js" ]; then
    log "install Task Master 0.43.1 into $tm"
    mkdir -p "$tm"
    cp adapters/task-master/package.json adapters/task-master/package-lock.json "$tm/"
    (cd "$tm" && npm ci --silent)
  fi
  t="mcp:node $tm/node_modules/task-master-ai/dist/mcp-server.js"
  log "record $t"
  taskproof profile record --target "$t" --mapping mappings/task-master.toml --timeout 300 --start-timeout 300 --jobs 2 \
    --name task-master-0.43.1-mcp --out profiles/task-master-0.43.1-mcp.json
  log "matrix column $t"
  taskproof maint matrix --target "$t" --mapping mappings/task-master.toml --timeout 300 --start-timeout 300 --jobs 2 \
    --label "task-master-0.43.1-mcp=$t" --out reports
fi

log "rebuild the pages with every column"
taskproof maint matrix --from reports/matrix --from reports/claude-code --out reports
