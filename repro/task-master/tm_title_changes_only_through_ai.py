#!/usr/bin/env python3
"""Task Master: a task's title and description change only through its AI.

asks: Do only tools that add a task (add_task, add_subtask) take a title, and does `update_task`
(which takes a prompt for the model) fail without a model key, leaving the title as it was?

Strict contract: S11 (an update sets any field). taskproof's adapter answers such a patch
`unsupported`; found by taskproof fuzz (reports/fuzz-recall.md).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from _tm import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    s, project = start(version, tmp)
    tools = s.list_tools()
    titled = sorted(t["name"] for t in tools
                    if "title" in (t.get("inputSchema") or {}).get("properties", {}))
    log(f"tools taking a title: {titled}")
    s.call("add_task", {"projectRoot": project, "title": "A", "description": "the first task"})
    u = s.call("update_task", {"projectRoot": project, "id": "1", "prompt": "Rename this task to B"})
    log(f"update_task with a prompt: isError={u.is_error} {u.text[:200]!r}")
    tasks = json.loads((Path(project) / ".taskmaster" / "tasks" / "tasks.json").read_text())
    listed = tasks.get("master", tasks).get("tasks", [])
    title = listed[0].get("title") if listed else None
    answer = all(n.startswith("add_") for n in titled) and u.is_error and title == "A"
    return answer, (f"tools taking a title: {titled}; update_task with a prompt -> "
                    f"{'error' if u.is_error else 'answered'}; title now {title!r}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-tm-")
