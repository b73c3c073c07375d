#!/usr/bin/env python3
"""@kazuph/mcp-taskmanager: a task cannot be marked in progress.

asks: Does the server lack any way to say a task is in progress: no tool takes a status (or
state, progress) argument, and a task as `open_task_details` shows it has no status field,
only `done` and `approved` (false for a new task)?

taskproof's wire has three statuses (SPEC S4: pending -> in_progress is allowed); its mapping
answers `unsupported` for in_progress (mappings/mcp-taskmanager.toml). The server's own
progress table prints "In Progress" for every task not done, new ones included. Storage:
TASK_MANAGER_FILE_PATH in a temporary folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402
from kazuph import PACKAGE, DEFAULT_VERSION  # noqa: E402

WORDS = ("status", "state", "progress", "inprogress", "started")


def body(version, tmp):
    folder = npm_package(PACKAGE, version)
    s = McpServer([npm_bin(folder, "mcp-taskmanager")], cwd=tmp,
                  env={"HOME": tmp, "TASK_MANAGER_FILE_PATH": f"{tmp}/tasks.json"})
    s.initialize()
    tools = s.list_tools()
    taking = [f"{t['name']}.{p}" for t in tools
              for p in (t.get("inputSchema") or {}).get("properties", {})
              if any(w in p.lower().replace("_", "") for w in WORDS)]
    log(f"tools: {', '.join(t['name'] for t in tools)}; arguments naming a status: {taking}")
    plan = s.call("request_planning", {"originalRequest": "r", "tasks": [{"title": "A", "description": "a"}]}).json()
    tid = plan["tasks"][0]["id"]
    task = s.call("open_task_details", {"taskId": tid}).json()["task"]
    fields = sorted(task)
    log(f"task view fields: {fields}")
    status_like = [f for f in fields if any(w in f.lower() for w in WORDS)]
    answer = not taking and not status_like and task.get("done") is False
    return answer, (f"{len(tools)} tools, none with a status argument ({taking or 'none'}); a "
                    f"new task's fields are {', '.join(fields)} (done={task.get('done')})")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-kazuph-")
