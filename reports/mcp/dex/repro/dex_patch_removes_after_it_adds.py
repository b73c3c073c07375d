#!/usr/bin/env python3
"""@zeeg/dex: one update_task that adds and removes the same blocker leaves none.

asks: Does `update_task {id: A, add_blocked_by: [B], remove_blocked_by: [B]}` on a task A
without blockers succeed and leave A with no blocker?

Drives `dex mcp` from npm, storage in a temporary folder. The strict contract applies a
patch's edge removals before its additions (docs/spec.md, "Order of checks"), so A ends
blocked by B; dex removes after it adds. Found by `taskproof fuzz` on dex
(reports/fuzz-recall.md).
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
    both = s.call("update_task", {"id": a, "add_blocked_by": [b], "remove_blocked_by": [b]})
    log(f"add and remove B in one call: isError={both.is_error} {both.text[:160]!r}")
    listed = json.loads(s.call("list_tasks", {"all": True}).text)
    ta = next(t for t in listed if t["id"] == a)
    blockers = ta.get("blockedBy") or []
    log(f"list: A blockedBy={blockers}")
    answer = (not both.is_error) and b not in blockers
    observed = (f"add_blocked_by [B] with remove_blocked_by [B] -> "
                f"{'accepted' if not both.is_error else 'refused'}; A blockedBy={blockers}")
    return answer, observed


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-dex-")
