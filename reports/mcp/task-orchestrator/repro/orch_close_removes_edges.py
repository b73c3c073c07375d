#!/usr/bin/env python3
"""@allpepper/task-orchestrator: completing a blocker removes the edge from its dependent.

asks: With A BLOCKS B, after A is advanced NEW -> ACTIVE -> CLOSED, is A gone from B's
`blockedBy` (the server's "Auto-unblocked 1 dependent(s)")?

Strict contract: S9 (completing a task rewrites no other task; readiness is derived, edges
are kept) expects B's blockedBy to still name A.
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
    s.call("block", {"containerType": "task", "id": b, "version": 1, "blockedBy": [a]})
    before = get(s, b)["data"]["task"]["blockedBy"]
    msgs = []
    for _ in range(2):
        v = get(s, a)["data"]["task"]["version"]
        r = s.call("advance", {"containerType": "task", "id": a, "version": v}).json()
        msgs.append(r.get("message"))
    status = get(s, a)["data"]["task"]["status"]
    after = get(s, b)["data"]["task"]["blockedBy"]
    log(f"B.blockedBy before={before}; advance A: {msgs}; A status {status}; B.blockedBy after={after}")
    answer = a in before and status == "CLOSED" and a not in after
    return answer, (f"B blocked by A; A advanced to {status}; A still in B.blockedBy afterwards: {a in after}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-orch-")
