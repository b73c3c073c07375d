#!/usr/bin/env python3
"""@allpepper/task-orchestrator: deleting a blocker leaves its id in the dependent's blockedBy.

asks: With A BLOCKS B, after `manage_container` delete of A (success), does B's `blockedBy`
still name A, and does `get_blocked_tasks` still list B as blocked? (The observed line also
says whether B can still be advanced.)

Strict contract: S10 (delete removes the id from every other task's edges, atomically).
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
    d = s.call("manage_container", {"operation": "delete", "containerType": "task", "id": a}).json()
    gone = get(s, a)
    after = get(s, b)["data"]["task"]["blockedBy"]
    blocked = [t["id"] for t in s.call("get_blocked_tasks", {}).json().get("data") or []]
    v = get(s, b)["data"]["task"]["version"]
    adv = s.call("advance", {"containerType": "task", "id": b, "version": v}).json()
    log(f"delete A: {d.get('message')}; get A: {gone.get('message')}; B.blockedBy={after}; "
        f"blocked tasks={blocked}; advance B: {adv.get('message')}")
    answer = bool(d.get("success")) and not gone.get("success") and a in after and b in blocked
    return answer, (f"A deleted (get A: {gone.get('message')!r}); B.blockedBy still names A: {a in after}; "
                    f"B listed by get_blocked_tasks: {b in blocked}; advance B: {adv.get('message')!r}").replace(a, "A")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-orch-")
