#!/usr/bin/env python3
"""Task Master: add_task with a dependency on a task id that does not exist creates the task.

asks: In a project with one task (id 1), does `add_task {dependencies: "99"}` succeed, answering
a new task, rather than refuse the unknown dependency?

Strict contract: S6 expects `dangling`. Found by taskproof fuzz (reports/fuzz-recall.md).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from _tm import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    s, project = start(version, tmp)
    a = s.call("add_task", {"projectRoot": project, "title": "A", "description": "the first task"})
    log(f"add_task A: isError={a.is_error} {a.text[:160]!r}")
    b = s.call("add_task", {"projectRoot": project, "title": "B", "description": "the second task",
                            "dependencies": "99"})
    log(f"add_task B depending on 99: isError={b.is_error} {b.text[:300]!r}")
    tasks = json.loads((Path(project) / ".taskmaster" / "tasks" / "tasks.json").read_text())
    listed = tasks.get("master", tasks).get("tasks", [])
    mine = [t for t in listed if t.get("title") == "B"]
    deps = mine[0].get("dependencies") if mine else None
    answer = (not b.is_error) and bool(mine)
    return answer, (f"add_task with dependencies 99 -> {'error' if b.is_error else 'created'}; "
                    f"task B in tasks.json: {bool(mine)}, its dependencies {deps}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-tm-")
