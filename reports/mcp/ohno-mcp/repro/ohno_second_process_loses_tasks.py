#!/usr/bin/env python3
"""@stevestomp/ohno-mcp: a second server process on the same database loses acknowledged tasks.

asks: With two `ohno-mcp` processes on one tasks.db, both having answered one call, does a
task that process 1 created (success) stay unseen by process 2 and then disappear from the
database once process 2 creates a task of its own (a fresh process lists only process 2's)?

ohno (sql.js) loads the database file into memory once, on a process's first tool call, and
writes the whole in-memory database back to the file after every change. Strict contract:
S14 (nothing acknowledged vanishes), S19 (concurrent writers).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from ohno import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    p1, p2 = start(version, tmp), start(version, tmp)
    p1.call("get_tasks", {})
    p2.call("get_tasks", {})
    a = p1.call("create_task", {"title": "from process 1"}).json()["task_id"]
    seen = p2.call("get_task", {"task_id": a}).json()
    log(f"process 1 created {a}; process 2 get_task: {seen}")
    b = p2.call("create_task", {"title": "from process 2"}).json()["task_id"]
    log(f"process 2 created {b}")
    p1.close()
    p2.close()
    p3 = start(version, tmp)
    ids = [t["id"] for t in p3.call("get_tasks", {}).json()["tasks"]]
    log(f"fresh process lists {ids}")
    answer = "error" in seen and a not in ids and b in ids
    return answer, (f"process 2 {'did not see' if 'error' in seen else 'saw'} process 1's task; after process 2's "
                    f"create a fresh process lists process 1's task: {a in ids}, process 2's: {b in ids}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-ohno-")
