#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a dependency on an id no task has is kept, whatever its form.

asks: Does `update_task` A with `dependencies: ["999"]` (no task has that id or name) answer
"Success" and leave `999` on A's Dependencies line (`get_task_detail`)?

taskproof's mapping gives the server a wire id it does not know as it is ("999", or an id of
another list), so this is what the server is asked in rt05 and edges-cannot-cross-lists
(shrimp_dangling_dependency_accepted.py shows the same for a UUID). Strict contract: S6
expects `dangling`. Storage: DATA_DIR in a temporary folder.
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
    a = split(s, [("A", [])])["A"]
    r = s.call("update_task", {"taskId": a, "dependencies": ["999"]})
    ok = "## Success" in r.text and not r.is_error
    line = next((l for l in detail(s, a).splitlines() if l.startswith("**Dependencies:**")), "")
    log(f"update A deps [999]: isError={r.is_error} {r.text[:80]!r}; {line!r}")
    kept = "`999`" in line
    return ok and kept, f"update A dependencies [\"999\"]: success={ok}; kept on A: {kept} ({line!r})"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
