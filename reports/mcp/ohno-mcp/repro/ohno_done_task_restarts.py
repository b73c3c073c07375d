#!/usr/bin/env python3
"""@stevestomp/ohno-mcp: a finished task can be started again by a status change.

asks: After `update_task_status` -> "done", does `update_task_status` -> "in_progress" answer
success and leave the task "in_progress"?

Strict contract: S4 (completed is final) expects `transition`.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402
from ohno import PACKAGE, DEFAULT_VERSION  # noqa: E402


def body(version, tmp):
    folder = npm_package(PACKAGE, version)
    s = McpServer([npm_bin(folder, "ohno-mcp")], cwd=tmp,
                  env={"HOME": tmp, "OHNO_DB_PATH": f"{tmp}/.ohno/tasks.db"})
    s.initialize()
    a = s.call("create_task", {"title": "A"}).json()["task_id"]
    done = s.call("update_task_status", {"task_id": a, "status": "done"}).json()
    back = s.call("update_task_status", {"task_id": a, "status": "in_progress"}).json()
    ta = s.call("get_task", {"task_id": a}).json()
    log(f"done -> {done}; in_progress -> {back}; status now {ta['status']}")
    answer = done.get("success") is True and back.get("success") is True \
        and ta["status"] == "in_progress"
    return answer, f"done then in_progress: success={back.get('success')}; task now {ta['status']}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-ohno-")
