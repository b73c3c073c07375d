#!/usr/bin/env python3
"""@allpepper/task-orchestrator: a two-task BLOCKS cycle is accepted.

asks: With A BLOCKS B (`manage_dependency` create), does B BLOCKS A answer success, so that
each task's `blockedBy` names the other?

(A self-dependency and a missing task are refused: "Cannot create a dependency from an entity
to itself", "NOT_FOUND".) Strict contract: S7 expects `cycle`.
Started as `bun src/server.ts --stdio` (no HTTP listener), TASK_ORCHESTRATOR_HOME in a
temporary folder; bun comes from npm (package `bun`) into the same install folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402

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


def body(version, tmp):
    s = start(version, tmp)
    a, b = create(s, "A"), create(s, "B")
    first = s.call("manage_dependency", {"operation": "create", "fromId": a, "toId": b, "type": "BLOCKS"}).json()
    second = s.call("manage_dependency", {"operation": "create", "fromId": b, "toId": a, "type": "BLOCKS"}).json()
    log(f"A BLOCKS B: success={first.get('success')}; B BLOCKS A: success={second.get('success')} {second.get('message')}")
    ba = get(s, a)["data"]["task"]["blockedBy"]
    bb = get(s, b)["data"]["task"]["blockedBy"]
    log(f"A.blockedBy={ba}; B.blockedBy={bb}")
    answer = bool(first.get("success")) and bool(second.get("success")) and b in ba and a in bb
    return answer, (f"A BLOCKS B then B BLOCKS A: second success={second.get('success')}; "
                    f"A blocked by B: {b in ba}, B blocked by A: {a in bb}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-orch-")
