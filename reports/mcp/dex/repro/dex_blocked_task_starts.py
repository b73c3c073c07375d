#!/usr/bin/env python3
"""@zeeg/dex: a task whose blocker is not completed can be started and completed.

asks: Does `update_task` accept `started_at` and then `completed: true` on a task whose only
blocker (given as `blocked_by` at creation) is still pending, and show it completed?

Drives `dex mcp` (the package's own MCP server) from npm, storage in a temporary folder
(DEX_STORAGE_PATH). Strict contract: S5 (AND-blocking) expects `blocked` for both steps.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from dex import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    a = json.loads(s.call("create_task", {"name": "A", "description": "blocker"}).text)["id"]
    r = s.call("create_task", {"name": "B", "description": "blocked", "blocked_by": [a]})
    b = json.loads(r.text)
    log(f"created A={a}, B={b['id']} blockedBy={b['blockedBy']}")
    started = s.call("update_task", {"id": b["id"], "started_at": "2026-01-01T00:00:00Z"})
    log(f"start B: isError={started.is_error} {started.text[:160]!r}")
    done = s.call("update_task", {"id": b["id"], "completed": True, "result": "done"})
    log(f"complete B: isError={done.is_error} {done.text[:160]!r}")
    listed = json.loads(s.call("list_tasks", {"all": True}).text)
    tb = next(t for t in listed if t["id"] == b["id"])
    ta = next(t for t in listed if t["id"] == a)
    log(f"list: A completed={ta['completed']}, B completed={tb['completed']} "
        f"started_at={tb['started_at']} blockedBy={tb['blockedBy']}")
    answer = (not started.is_error and not done.is_error and tb["completed"] is True
              and ta["completed"] is False and a in tb["blockedBy"])
    observed = (f"blocker pending; start {'accepted' if not started.is_error else 'refused'}, "
                f"complete {'accepted' if not done.is_error else 'refused'}; "
                f"B completed={tb['completed']} while its blockedBy still names A (pending)")
    return answer, observed


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-dex-")
