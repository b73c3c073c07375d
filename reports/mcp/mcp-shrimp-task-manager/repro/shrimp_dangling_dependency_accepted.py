#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a dependency on a task that does not exist is accepted.

asks: Does `update_task` A with `dependencies: [a UUID no task has]` answer "Success" and
leave that id in A's dependencies (`get_task_detail`)?

Strict contract: S6 expects `dangling`.
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
