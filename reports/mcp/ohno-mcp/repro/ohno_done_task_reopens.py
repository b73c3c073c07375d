#!/usr/bin/env python3
"""@stevestomp/ohno-mcp: a finished task can be reopened by a status change.

asks: After `update_task_status` -> "done", does `update_task_status` -> "todo" answer
success and leave the task "todo"?

(ohno also has `reopen_task`, meant for archived tasks; this is the plain status tool.)
Strict contract: S4 (completed is final) expects `transition`.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from ohno import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    a = s.call("create_task", {"title": "A"}).json()["task_id"]
    done = s.call("update_task_status", {"task_id": a, "status": "done"}).json()
    back = s.call("update_task_status", {"task_id": a, "status": "todo"}).json()
    ta = s.call("get_task", {"task_id": a}).json()
    log(f"done -> {done}; todo -> {back}; status now {ta['status']}")
    answer = done.get("success") is True and back.get("success") is True and ta["status"] == "todo"
    return answer, f"done then todo: success={back.get('success')}; task now {ta['status']}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-ohno-")
