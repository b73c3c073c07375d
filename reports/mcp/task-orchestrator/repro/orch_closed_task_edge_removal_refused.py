#!/usr/bin/env python3
"""@allpepper/task-orchestrator: a CLOSED task's dependencies cannot be removed.

asks: With A BLOCKS B and both advanced to CLOSED (A first), is `manage_dependency` delete of
that dependency refused with "entity is in terminal state" (and likewise the delete of a
dependency B never had, from a third task C), where the strict contract lets a completed task
lose a blocker (only gaining an unfinished one is refused, S5)?

Seen by taskproof's fuzzer as a finding labelled S5 (fuzz-a7c36311e64a: `removeBlockedBy` on a
completed task answered blocked, the mapping's reading of "Cannot block …: entity is in
terminal state"). Started as `bun src/server.ts --stdio`.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from orch import DEFAULT_VERSION, start, create, get  # noqa: E402


def close(s, tid):
    for _ in range(2):
        v = get(s, tid)["data"]["task"]["version"]
        r = s.call("advance", {"containerType": "task", "id": tid, "version": v}).json()
        if not r.get("success"):
            raise ValueError(f"advance failed: {r}")


def body(version, tmp):
    s = start(version, tmp)
    a, b, c = create(s, "A"), create(s, "B"), create(s, "C")
    s.call("manage_dependency", {"operation": "create", "type": "BLOCKS", "fromId": a, "toId": b})
    close(s, a)
    close(s, b)
    there = s.call("manage_dependency", {"operation": "delete", "type": "BLOCKS",
                                         "fromId": a, "toId": b}).json()
    absent = s.call("manage_dependency", {"operation": "delete", "type": "BLOCKS",
                                          "fromId": c, "toId": b}).json()
    still = get(s, b)["data"]["task"]["blockedBy"]
    msg = lambda r: "ok" if r.get("success") else r.get("message", "")
    log(f"B closed; remove A->B: {msg(there)}; remove C->B: {msg(absent)}; B.blockedBy={still}")
    refused = lambda r: not r.get("success") and "terminal state" in r.get("message", "")
    answer = refused(there) and refused(absent)
    return answer, (f"B closed: removing its dependency on A: {msg(there)!r}; one it never had: "
                    f"{msg(absent)!r}; B still blocked by A: {a in still}").replace(a, "A").replace(b, "B").replace(c, "C")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-orch-")
