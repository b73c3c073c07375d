"""Shared by the Task Master reproductions: task-master-ai's own MCP server from its npm package,
started with a private HOME and TMPDIR and every tool loaded, one project folder as the list, no
model key (nothing here asks for its AI). No code of taskproof's."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from mcp_stdio import McpServer, npm_package  # noqa: E402

PACKAGE, DEFAULT_VERSION = "task-master-ai", "0.43.1"


def start(version, tmp):
    folder = npm_package(PACKAGE, version)
    server = os.path.join(folder, "node_modules", PACKAGE, "dist", "mcp-server.js")
    project = os.path.join(tmp, "project")
    for d in ("home", "tmp", "project"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    s = McpServer(["node", server], cwd=project, timeout=120, start_timeout=300,
                  env={"HOME": f"{tmp}/home", "TMPDIR": f"{tmp}/tmp", "TASK_MASTER_TOOLS": "all",
                       "NO_COLOR": "1", "ANTHROPIC_API_KEY": None, "OPENAI_API_KEY": None})
    s.initialize()
    return s, project
