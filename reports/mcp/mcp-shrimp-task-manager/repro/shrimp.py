"""Shared by the mcp-shrimp-task-manager reproductions in this folder: the server started from its npm package with its data in a temporary folder, and the calls each script makes through its tools (no code of taskproof's)."""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, npm_bin, npm_package  # noqa: E402

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


def deps(s, tid):
    """The ids on the **Dependencies:** line of get_task_detail."""
    text = s.call("get_task_detail", {"taskId": tid}).text
    m = re.search(r"\*\*Dependencies:\*\* ?(.*)", text)
    return re.findall(UUID, m.group(1)) if m else []
