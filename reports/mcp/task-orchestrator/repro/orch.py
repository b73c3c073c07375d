"""Shared by the @allpepper/task-orchestrator reproductions in this folder: the server started with bun from npm, its home in a temporary folder, and the calls several scripts make (no code of taskproof's)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, npm_bin, npm_package  # noqa: E402

PACKAGE, DEFAULT_VERSION, BUN = "@allpepper/task-orchestrator", "3.3.3", "bun@1.4.5"


def start(version, tmp):
    folder = npm_package(PACKAGE, version, bins=(BUN,))
    server_ts = Path(folder) / "node_modules" / PACKAGE / "src" / "server.ts"
    s = McpServer([npm_bin(folder, "bun"), str(server_ts), "--stdio"], cwd=tmp,
                  env={"HOME": tmp, "TASK_ORCHESTRATOR_HOME": f"{tmp}/.task-orchestrator"})
    s.initialize()
    return s


def create(s, title):
    r = s.call("manage_container", {"operation": "create", "containerType": "task", "title": title,
                                    "summary": title, "priority": "MEDIUM", "complexity": 1}).json()
    if not r.get("success"):
        raise ValueError(f"create failed: {r}")
    return r["data"]["task"]["id"]


def get(s, tid):
    return s.call("query_container", {"operation": "get", "containerType": "task", "id": tid}).json()
