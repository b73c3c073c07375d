#!/usr/bin/env python3
"""@kazuph/mcp-taskmanager: a task marked done can be neither renamed nor deleted.

asks: After `mark_task_done`, are both `update_task {title}` and `delete_task` of that task
refused, and is it still there with its old title?

Drives the server from npm with tasks.json in a temporary folder. Strict contract: only a
completed task's status is final (S4); its other fields can change (S11) and it can be
deleted (S10). Found by `taskproof fuzz` (reports/fuzz-recall.md).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from kazuph import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    plan = s.call("request_planning", {"originalRequest": "r", "tasks": [
        {"title": "A", "description": "task"}]}).json()
    req, a = plan["requestId"], plan["tasks"][0]["id"]
    done = s.call("mark_task_done", {"requestId": req, "taskId": a})
    log(f"mark_task_done: isError={done.is_error} {done.text[:120]!r}")
    rename = s.call("update_task", {"requestId": req, "taskId": a, "title": "renamed"})
    log(f"update_task title: isError={rename.is_error} {rename.text[:160]!r}")
    delete = s.call("delete_task", {"requestId": req, "taskId": a})
    log(f"delete_task: isError={delete.is_error} {delete.text[:160]!r}")
    details = s.call("open_task_details", {"taskId": a})
    log(f"open_task_details: {details.text[:200]!r}")
    still = (details.json() or {}).get("task", {}).get("title") == "A"
    refused = lambda r: r.is_error or (r.json() or {}).get("status") == "error"
    answer = refused(rename) and refused(delete) and still
    observed = (f"after mark_task_done: rename {'refused' if refused(rename) else 'accepted'} "
                f"({rename.text[:80]!r}), delete {'refused' if refused(delete) else 'accepted'} "
                f"({delete.text[:80]!r}); task still there with its title: {still}")
    return answer, observed


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-kazuph-")
