#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a two-task dependency cycle is accepted.

asks: With B depending on A (given at `split_tasks`), does `update_task` A with
`dependencies: [B]` answer "Success", so that `get_task_detail` shows each task depending on
the other?

Strict contract: S7 expects `cycle`. Storage: DATA_DIR (absolute) in a temporary folder;
TEMPLATES_USE=en. Ids and dependencies are read from the server's markdown answers.
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
    r = s.call("update_task", {"taskId": a, "dependencies": [b]})
    ok = "## Success" in r.text and not r.is_error
    log(f"update A dependencies=[B]: isError={r.is_error} {r.text[:120]!r}")
    da, db = deps(s, a), deps(s, b)
    log(f"A depends on {da}; B depends on {db}")
    answer = ok and b in da and a in db
    return answer, f"B depends on A; update A deps [B] success={ok}; A on B: {b in da}, B on A: {a in db}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
