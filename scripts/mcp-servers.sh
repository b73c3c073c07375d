# Sourced by reports/mcp/run.sh, scripts/fuzz-recall.sh and scripts/fuzz-speed.sh: where the
# five MCP task servers with shipped mappings are installed (the head of each mappings/NAME.toml
# says how), and the command that starts each. M is the cache folder.
M=${TASKPROOF_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taskproof/mcp}

# The command that starts server NAME (the mcp: target without its prefix).
mcp_command() {
  case $1 in
    dex) echo "$M/@zeeg+dex@0.16.0/node_modules/.bin/dex mcp" ;;
    mcp-taskmanager) echo "$M/@kazuph+mcp-taskmanager@1.1.1/node_modules/.bin/mcp-taskmanager" ;;
    ohno-mcp) echo "$M/@stevestomp+ohno-mcp@0.20.0/node_modules/.bin/ohno-mcp" ;;
    task-orchestrator)
      d=$M/@allpepper+task-orchestrator@3.3.3/node_modules
      echo "$d/.bin/bun $d/@allpepper/task-orchestrator/src/server.ts" ;;
    mcp-shrimp-task-manager) echo "$M/mcp-shrimp-task-manager@1.0.21/node_modules/.bin/mcp-shrimp-task-manager" ;;
    *) return 1 ;;
  esac
}
