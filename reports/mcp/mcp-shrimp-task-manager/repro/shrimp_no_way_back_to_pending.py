#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a started task cannot be set back to pending.

asks: Once `execute_task` has started a task (in_progress), does the server lack any way to set
it pending again: no tool but `list_tasks` (a filter) takes a status argument, and the task is
still in_progress after `update_task` is given `status: "pending"`?

Strict contract: S4 allows in_progress -> pending; taskproof's mapping answers it `unsupported`
(mappings/mcp-shrimp-task-manager.toml). Storage: DATA_DIR in a temporary folder.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402

PACKAGE, DEFAULT_VERSION = "mcp-shrimp-task-manager", "1.0.21"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def start(version, tmp, data="data"):
    folder = npm_package(PACKAGE, version)
    s = McpServer([npm_bin(folder, "mcp-shrimp-task-manager")], cwd=tmp,
                  env={"HOME": tmp, "DATA_DIR": f"{tmp}/{data}", "TEMPLATES_USE": "en"})
    s.initialize()
    return s


def split(s, tasks):
    """split_tasks in append mode; returns {name: id} read from the answer's Task List."""
    raw = [{"name": n, "description": f"{n}: a description of ten or more characters",
            "implementationGuide": "x", "dependencies": deps} for n, deps in tasks]
    r = s.call("split_tasks", {"updateMode": "append", "tasksRaw": json.dumps(raw)})
    found = dict(re.findall(r"### Task \d+: (.+)\n\n\*\*ID:\*\* `(" + UUID + ")`", r.text))
    if any(n not in found for n, _ in tasks):
        raise ValueError(f"split_tasks answer not understood: {r.text[:300]!r}")
    return found


def detail(s, tid):
    return s.call("get_task_detail", {"taskId": tid}).text


def status(s, tid):
    m = re.search(r"\*\*Status:\*\* (\w+)", detail(s, tid))
    return m.group(1) if m else None


def complete(s, tid):
    s.call("execute_task", {"taskId": tid})
    s.call("verify_task", {"taskId": tid, "score": 100,
                           "summary": "Completed for a reproduction of a taskproof finding."})
    return status(s, tid)


def body(version, tmp):
    s = start(version, tmp)
    taking = [f"{t['name']}.{p}" for t in s.list_tools()
              for p in (t.get("inputSchema") or {}).get("properties", {})
              if p.lower() in ("status", "state") and t["name"] != "list_tasks"]
    a = split(s, [("A", [])])["A"]
    s.call("execute_task", {"taskId": a})
    before = status(s, a)
    r = s.call("update_task", {"taskId": a, "status": "pending"})
    after = status(s, a)
    log(f"status arguments outside list_tasks: {taking}; started: {before}; "
        f"update_task status=pending: isError={r.is_error} {r.text[:120]!r}; now {after}")
    answer = not taking and before == "in_progress" and after == "in_progress"
    return answer, (f"no tool but list_tasks takes a status ({taking or 'none'}); started task "
                    f"{before}, after update_task status=pending still {after}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
