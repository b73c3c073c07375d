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
from mcp_stdio import log, run_repro  # noqa: E402
from orch import DEFAULT_VERSION, start, create, get  # noqa: E402


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
