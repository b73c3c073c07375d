#!/usr/bin/env python3
"""@kazuph/mcp-taskmanager: the id of a deleted task is handed out again.

asks: After `delete_task` of the newest task (task-2), does the next `add_tasks_to_request`
in the same server process hand out task-2 again?

Task ids are "task-" + (highest id number in tasks.json + 1), recomputed from the file on
every call, so deleting the newest task frees its number. Strict contract: S1 (ids never
reused). Storage: TASK_MANAGER_FILE_PATH in a temporary folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from kazuph import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    plan = s.call("request_planning", {"originalRequest": "r", "tasks": [
        {"title": "A", "description": "a"}, {"title": "B", "description": "b"}]}).json()
    req = plan["requestId"]
    first = [t["id"] for t in plan["tasks"]]
    log(f"planned {req} with {first}")
    deleted = s.call("delete_task", {"requestId": req, "taskId": first[-1]}).json()
    log(f"delete {first[-1]}: {deleted['status']}")
    added = s.call("add_tasks_to_request", {"requestId": req, "tasks": [
        {"title": "C", "description": "c"}]}).json()
    new_id = added["newTasks"][0]["id"]
    log(f"next task added: {new_id} ({added['status']})")
    answer = deleted["status"] == "task_deleted" and new_id == first[-1]
    return answer, f"created {', '.join(first)}; deleted {first[-1]}; next create was given {new_id}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-kazuph-")
