#!/usr/bin/env python3
"""@allpepper/task-orchestrator: a closed task cannot be made a blocker.

asks: With A and B both advanced to CLOSED, is `manage_dependency` A BLOCKS B refused ("Cannot
use blocker A: entity is in terminal state CLOSED")? (The observed line also says whether A
can block a task that is still NEW.)

Strict contract: S5 forbids only a *not completed* blocker of a completed task, so adding a
completed blocker to a completed task must succeed. Started as `bun src/server.ts --stdio`,
TASK_ORCHESTRATOR_HOME in a temporary folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from orch import DEFAULT_VERSION, start, create  # noqa: E402


def close(s, tid):
    for _ in range(2):
        v = s.call("query_container", {"operation": "get", "containerType": "task", "id": tid}).json()["data"]["task"]["version"]
        s.call("advance", {"containerType": "task", "id": tid, "version": v})
    return s.call("query_container", {"operation": "get", "containerType": "task", "id": tid}).json()["data"]["task"]["status"]


def body(version, tmp):
    s = start(version, tmp)
    a, b, c = create(s, "A"), create(s, "B"), create(s, "C")
    log(f"A {close(s, a)}, B {close(s, b)}, C NEW")
    both = s.call("manage_dependency", {"operation": "create", "fromId": a, "toId": b, "type": "BLOCKS"}).json()
    log(f"A BLOCKS B (both closed): {both}")
    open_ = s.call("manage_dependency", {"operation": "create", "fromId": a, "toId": c, "type": "BLOCKS"}).json()
    log(f"A BLOCKS C (C new): {open_}")
    refused = both.get("success") is False and "terminal state" in (both.get("message") or "")
    return refused, (f"A and B closed: A BLOCKS B success={both.get('success')} "
                     f"({both.get('message')!r}); A BLOCKS C (C new) success={open_.get('success')}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-orch-")
