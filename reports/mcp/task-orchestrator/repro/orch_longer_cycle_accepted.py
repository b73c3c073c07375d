#!/usr/bin/env python3
"""@allpepper/task-orchestrator: a three-task BLOCKS cycle is accepted.

asks: With A BLOCKS B and B BLOCKS C (`manage_dependency` create), does C BLOCKS A answer
success, so that A's `blockedBy` names C?

Strict contract: S7 expects `cycle` (orch_cycle_accepted.py shows the two-task cycle).
Started as `bun src/server.ts --stdio`, TASK_ORCHESTRATOR_HOME in a temporary folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402
from orch import PACKAGE, DEFAULT_VERSION, BUN  # noqa: E402


def body(version, tmp):
    folder = npm_package(PACKAGE, version, bins=(BUN,))
    server_ts = Path(folder) / "node_modules" / PACKAGE / "src" / "server.ts"
    s = McpServer([npm_bin(folder, "bun"), str(server_ts), "--stdio"], cwd=tmp,
                  env={"HOME": tmp, "TASK_ORCHESTRATOR_HOME": f"{tmp}/.task-orchestrator"})
    s.initialize()

    def create(title):
        return s.call("manage_container", {"operation": "create", "containerType": "task", "title": title,
                                           "summary": title, "priority": "MEDIUM", "complexity": 1}).json()["data"]["task"]["id"]

    def blocks(x, y):
        return s.call("manage_dependency", {"operation": "create", "fromId": x, "toId": y, "type": "BLOCKS"}).json()

    a, b, c = create("A"), create("B"), create("C")
    first, second, third = blocks(a, b), blocks(b, c), blocks(c, a)
    log(f"A BLOCKS B: {first.get('success')}; B BLOCKS C: {second.get('success')}; C BLOCKS A: {third.get('success')} {third.get('message')}")
    ba = s.call("query_container", {"operation": "get", "containerType": "task", "id": a}).json()["data"]["task"]["blockedBy"]
    answer = bool(first.get("success")) and bool(second.get("success")) and bool(third.get("success")) and c in ba
    return answer, f"A BLOCKS B, B BLOCKS C, then C BLOCKS A: success={third.get('success')}; A blocked by C: {c in ba}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-orch-")
