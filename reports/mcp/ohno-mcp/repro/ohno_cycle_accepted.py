#!/usr/bin/env python3
"""@stevestomp/ohno-mcp: a two-task dependency cycle is accepted.

asks: With B depending on A, does `add_dependency` A on B answer success, so that each task
depends on the other (as `get_task_dependencies` shows)?

(A self-dependency and a dependency on a missing task are refused, as
`{"success": false, "error": "Could not add dependency (invalid tasks or already exists)"}`.)
Strict contract: S7 expects `cycle`.
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
    first = s.call("add_dependency", {"task_id": b, "depends_on_task_id": a}).json()
    second = s.call("add_dependency", {"task_id": a, "depends_on_task_id": b}).json()
    log(f"B on A: {first}; A on B: {second}")
    da = [d["depends_on_task_id"] for d in s.call("get_task_dependencies", {"task_id": a}).json()["dependencies"]]
    db = [d["depends_on_task_id"] for d in s.call("get_task_dependencies", {"task_id": b}).json()["dependencies"]]
    log(f"A depends on {da}; B depends on {db}")
    answer = first.get("success") is True and second.get("success") is True and b in da and a in db
    return answer, (f"B on A success={first.get('success')}, then A on B success={second.get('success')}; "
                    f"A depends on B: {b in da}, B depends on A: {a in db}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-ohno-")
