#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a task may depend on itself.

asks: Does `update_task` A with `dependencies: [A]` answer "Success" and leave A depending
on itself (`get_task_detail`)?

Strict contract: S7 (a task blocking itself is a cycle) expects `cycle`.
Storage: DATA_DIR (absolute) in a temporary folder; TEMPLATES_USE=en. Ids and dependencies
are read from the server's markdown answers.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start, split, deps  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    a = split(s, [("A", [])])["A"]
    r = s.call("update_task", {"taskId": a, "dependencies": [a]})
    ok = "## Success" in r.text and not r.is_error
    da = deps(s, a)
    log(f"update A deps [A]: isError={r.is_error}; A depends on {da}")
    return ok and a in da, f"update A deps [A] success={ok}; A depends on itself: {a in da}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
