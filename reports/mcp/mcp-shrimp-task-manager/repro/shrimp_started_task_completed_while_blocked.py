#!/usr/bin/env python3
"""mcp-shrimp-task-manager: an in-progress task that gains an unfinished dependency can be completed.

asks: With A started (`execute_task`) and then given `dependencies: [C]` (C pending) by
`update_task`, does `verify_task` A (score 95) mark A completed while C is still pending?

(`execute_task` refuses a task with an unfinished dependency; `verify_task` does not check.)
Strict contract: S5 expects `blocked` for the completion (and for the new blocker).
Storage: DATA_DIR (absolute) in a temporary folder; TEMPLATES_USE=en. Ids and dependencies
are read from the server's markdown answers.
"""
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start, split, deps  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    ids = split(s, [("A", []), ("C", [])])
    a, c = ids["A"], ids["C"]
    ex = s.call("execute_task", {"taskId": a})
    up = s.call("update_task", {"taskId": a, "dependencies": [c]})
    ver = s.call("verify_task", {"taskId": a, "summary": "Done and verified thoroughly, all good.", "score": 95})
    text_a = s.call("get_task_detail", {"taskId": a}).text
    text_c = s.call("get_task_detail", {"taskId": c}).text
    st_a = re.search(r"\*\*Status:\*\* (\w+)", text_a).group(1)
    st_c = re.search(r"\*\*Status:\*\* (\w+)", text_c).group(1)
    da = deps(s, a)
    log(f"execute A: isError={ex.is_error}; update deps [C]: {'Success' in up.text}; verify A: isError={ver.is_error}; "
        f"A {st_a} depends on C: {c in da}; C {st_c}")
    answer = st_a == "completed" and st_c == "pending" and c in da
    return answer, f"A started, then given dependency C (pending); verify_task -> A {st_a}, C {st_c}, A still depends on C: {c in da}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
