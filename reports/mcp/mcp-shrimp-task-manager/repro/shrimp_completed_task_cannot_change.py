#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a completed task cannot be changed at all.

asks: With A and C completed (execute_task, verify_task), does `update_task` refuse both A
with `dependencies: [C]` (a completed dependency) and A with a new name, answering
"無法更新已完成的任務" (cannot update a completed task)?

Strict contract: a completed task may still be renamed (S4 is about status only), and it may
gain a blocker that is completed (S5 refuses only an unfinished one, as `blocked`). Storage:
DATA_DIR in a temporary folder; TEMPLATES_USE=en.
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
    ids = split(s, [("A", []), ("C", [])])
    a, c = ids["A"], ids["C"]
    log(f"A {complete(s, a)}, C {complete(s, c)}")
    deps = s.call("update_task", {"taskId": a, "dependencies": [c]})
    name = s.call("update_task", {"taskId": a, "name": "A renamed"})
    log(f"A deps [C]: isError={deps.is_error} {deps.text[:100]!r}")
    log(f"A renamed: isError={name.is_error} {name.text[:100]!r}")
    refused = lambda r: "無法更新已完成的任務" in r.text
    answer = refused(deps) and refused(name)
    return answer, (f"A and C completed; update A dependencies [C]: refused={refused(deps)}; "
                    f"rename A: refused={refused(name)}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
