#!/usr/bin/env python3
"""@zeeg/dex: a completed task can be given a blocker that is not completed.

asks: After `update_task {completed: true}` on task A, does `update_task {id: A,
add_blocked_by: [B]}` with B pending succeed and leave A completed and blocked by B?

Drives `dex mcp` from npm, storage in a temporary folder. Strict contract: S5 (a completed task
never gains a blocker that is not completed) expects `blocked`. Found by `taskproof fuzz` on
dex (reports/fuzz-recall.md).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from dex import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    a = json.loads(s.call("create_task", {"name": "A", "description": "task"}).text)["id"]
    b = json.loads(s.call("create_task", {"name": "B", "description": "task"}).text)["id"]
    done = s.call("update_task", {"id": a, "completed": True, "result": "finished"})
    log(f"complete A: isError={done.is_error}")
    edge = s.call("update_task", {"id": a, "add_blocked_by": [b]})
    log(f"A blocked by pending B: isError={edge.is_error} {edge.text[:200]!r}")
    listed = json.loads(s.call("list_tasks", {"all": True}).text)
    ta = next(t for t in listed if t["id"] == a)
    log(f"list: A completed={ta['completed']} blockedBy={ta.get('blockedBy')}")
    answer = (not done.is_error) and (not edge.is_error) and ta["completed"] is True \
        and b in (ta.get("blockedBy") or [])
    observed = (f"A completed, then add_blocked_by [B pending] -> "
                f"{'accepted' if not edge.is_error else 'refused'}; "
                f"A completed={ta['completed']} blockedBy={ta.get('blockedBy')}")
    return answer, observed


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-dex-")
