#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a three-task dependency cycle is accepted.

asks: With B depending on A and C on B (given at `split_tasks`), does `update_task` A with
`dependencies: [C]` answer "Success" and leave C on A's Dependencies line?

Strict contract: S7 expects `cycle` (shrimp_cycle_accepted.py shows the two-task cycle).
Storage: DATA_DIR in a temporary folder.
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
    ids = split(s, [("A", []), ("B", ["A"]), ("C", ["B"])])
    a, c = ids["A"], ids["C"]
    r = s.call("update_task", {"taskId": a, "dependencies": [c]})
    ok = "## Success" in r.text and not r.is_error
    on = c in detail(s, a)
    log(f"update A deps [C]: isError={r.is_error} {r.text[:80]!r}; A depends on C: {on}")
    return ok and on, f"A <- B <- C; update A dependencies [C] success={ok}; A depends on C: {on}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
