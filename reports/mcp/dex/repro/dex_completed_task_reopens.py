#!/usr/bin/env python3
"""@zeeg/dex: a completed task can be reopened.

asks: After `update_task {completed: true}`, does `update_task {completed: false}` succeed and
leave the task not completed?

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
    done = s.call("update_task", {"id": a, "completed": True, "result": "finished"})
    log(f"complete: isError={done.is_error} completed={json.loads(done.text).get('completed')}")
    back = s.call("update_task", {"id": a, "completed": False})
    log(f"reopen: isError={back.is_error} {back.text[:200]!r}")
    listed = json.loads(s.call("list_tasks", {"all": True}).text)
    ta = next(t for t in listed if t["id"] == a)
    log(f"list: completed={ta['completed']} completed_at={ta['completed_at']} result={ta['result']!r}")
    answer = (not done.is_error) and (not back.is_error) and ta["completed"] is False
    observed = (f"completed then completed:false -> "
                f"{'accepted' if not back.is_error else 'refused'}; task now completed={ta['completed']}")
    return answer, observed


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-dex-")
