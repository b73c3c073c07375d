#!/usr/bin/env python3
"""@zeeg/dex: a completed task can be started again.

asks: After `update_task {completed: true}`, does `update_task {completed: false, started_at:
DATE}` (dex's "in progress": started and not completed) succeed and leave the task started and
not completed?

What taskproof's mapping sends for the wire status in_progress (mappings/dex.toml, [status]).
Drives `dex mcp` from npm, storage in a temporary folder. Strict contract: S4 (completed is
final) expects `transition`.
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
    done = s.call("update_task", {"id": a, "completed": True})
    log(f"complete: isError={done.is_error} completed={json.loads(done.text).get('completed')}")
    back = s.call("update_task", {"id": a, "completed": False, "started_at": "2026-01-01T00:00:00Z"})
    log(f"start again: isError={back.is_error} {back.text[:200]!r}")
    ta = next(t for t in json.loads(s.call("list_tasks", {"all": True}).text) if t["id"] == a)
    log(f"list: completed={ta['completed']} started_at={ta['started_at']}")
    answer = (not done.is_error) and (not back.is_error) and ta["completed"] is False \
        and ta["started_at"] is not None
    return answer, (f"completed, then completed:false with started_at -> "
                    f"{'accepted' if not back.is_error else 'refused'}; task now "
                    f"completed={ta['completed']}, started_at={ta['started_at']}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-dex-")
