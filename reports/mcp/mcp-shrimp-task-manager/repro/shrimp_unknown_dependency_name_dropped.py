#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a dependency on an unknown task name is dropped without a word.

asks: Does `split_tasks` (append) with a task whose `dependencies` names a task that does not
exist create that task without any dependency and without an error or warning?

Strict contract: S6 expects `dangling` (and a failed request changes nothing).
Storage: DATA_DIR (absolute) in a temporary folder; TEMPLATES_USE=en. Ids and dependencies
are read from the server's markdown answers.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402

PACKAGE, DEFAULT_VERSION = "mcp-shrimp-task-manager", "1.0.21"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def start(version, tmp):
    folder = npm_package(PACKAGE, version)
    s = McpServer([npm_bin(folder, "mcp-shrimp-task-manager")], cwd=tmp,
                  env={"HOME": tmp, "DATA_DIR": f"{tmp}/data", "TEMPLATES_USE": "en"})
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


def deps(s, tid):
    """The ids on the **Dependencies:** line of get_task_detail."""
    text = s.call("get_task_detail", {"taskId": tid}).text
    m = re.search(r"\*\*Dependencies:\*\* ?(.*)", text)
    return re.findall(UUID, m.group(1)) if m else []


def body(version, tmp):
    s = start(version, tmp)
    raw = [{"name": "C", "description": "C: a description of ten or more characters",
            "implementationGuide": "x", "dependencies": ["No task has this name"]}]
    r = s.call("split_tasks", {"updateMode": "append", "tasksRaw": json.dumps(raw)})
    m = re.search(r"### Task \d+: C\n\n\*\*ID:\*\* `(" + UUID + ")`", r.text)
    if not m:
        raise ValueError(f"split_tasks answer not understood: {r.text[:300]!r}")
    c = m.group(1)
    dc = deps(s, c)
    warned = "No task has this name" in r.text or "not found" in r.text.lower()
    log(f"split_tasks: isError={r.is_error}; mentions the unknown name: {warned}; C depends on {dc}")
    answer = not r.is_error and not warned and dc == []
    return answer, f"created C with deps ['No task has this name']: isError={r.is_error}, name mentioned={warned}, C dependencies={dc}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
