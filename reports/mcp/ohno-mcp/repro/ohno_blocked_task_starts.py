#!/usr/bin/env python3
"""@stevestomp/ohno-mcp: a task with an unfinished dependency can be started and finished.

asks: With B depending on A (`add_dependency`, type "blocks") and A still "todo", do
`update_task_status` B -> "in_progress" and then B -> "done" both answer success and leave
B "done"?

ohno's own `get_task_dependencies` says B `is_blocked: true` throughout. Strict contract: S5
(AND-blocking) expects `blocked`. Storage: OHNO_DB_PATH in a temporary folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from ohno import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    a = s.call("create_task", {"title": "A"}).json()["task_id"]
    b = s.call("create_task", {"title": "B"}).json()["task_id"]
    dep = s.call("add_dependency", {"task_id": b, "depends_on_task_id": a}).json()
    log(f"A={a} B={b}; add_dependency B on A: {dep}")
    blocked = s.call("get_task_dependencies", {"task_id": b}).json()["is_blocked"]
    started = s.call("update_task_status", {"task_id": b, "status": "in_progress"}).json()
    done = s.call("update_task_status", {"task_id": b, "status": "done"}).json()
    log(f"is_blocked before: {blocked}; in_progress -> {started}; done -> {done}")
    tb = s.call("get_task", {"task_id": b}).json()
    ta = s.call("get_task", {"task_id": a}).json()
    log(f"B status {tb['status']}, A status {ta['status']}")
    answer = (dep.get("success") is True and blocked is True and started.get("success") is True
              and done.get("success") is True and tb["status"] == "done" and ta["status"] == "todo")
    return answer, (f"B depends on A (A todo, is_blocked={blocked}); in_progress success={started.get('success')}, "
                    f"done success={done.get('success')}; B now {tb['status']}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-ohno-")
