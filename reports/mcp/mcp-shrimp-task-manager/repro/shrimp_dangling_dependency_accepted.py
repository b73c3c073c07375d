#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a dependency on a task that does not exist is accepted.

asks: Does `update_task` A with `dependencies: [a UUID no task has]` answer "Success" and
leave that id in A's dependencies (`get_task_detail`)?

Strict contract: S6 expects `dangling`.
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
    a = split(s, [("A", [])])["A"]
    ghost = "00000000-0000-4000-8000-000000000000"
    missing = s.call("get_task_detail", {"taskId": ghost})
    r = s.call("update_task", {"taskId": a, "dependencies": [ghost]})
    ok = "## Success" in r.text and not r.is_error
    da = deps(s, a)
    log(f"get_task_detail ghost: isError={missing.is_error}; update A deps [ghost]: isError={r.is_error}; A depends on {da}")
    return (missing.is_error and ok and ghost in da,
            f"ghost id unknown to get_task_detail; update A deps [ghost] success={ok}; ghost kept in A's dependencies: {ghost in da}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
