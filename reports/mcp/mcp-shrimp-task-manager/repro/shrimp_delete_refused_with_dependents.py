#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a task that another task depends on cannot be deleted.

asks: With B depending on A (both pending), does `delete_task` A answer a refusal (isError true, "## Failure" and
"無法刪除此任務，因為以下任務依賴於它…") and keep A?

Strict contract: S10 expects delete to succeed and remove A's id from B's dependencies.
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
    ids = split(s, [("A", []), ("B", ["A"])])
    a, b = ids["A"], ids["B"]
    r = s.call("delete_task", {"taskId": a})
    still = s.call("get_task_detail", {"taskId": a})
    log(f"delete A: isError={r.is_error} {r.text.strip()[:200]!r}; get A afterwards: isError={still.is_error}")
    refused = "## Success" not in r.text
    return refused and not still.is_error, (f"delete of A (B depends on it): refused={refused}, isError={r.is_error}; "
                                            f"A still there: {not still.is_error}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
