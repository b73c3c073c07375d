#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a two-task dependency cycle is accepted.

asks: With B depending on A (given at `split_tasks`), does `update_task` A with
`dependencies: [B]` answer "Success", so that `get_task_detail` shows each task depending on
the other?

Strict contract: S7 expects `cycle`. Storage: DATA_DIR (absolute) in a temporary folder;
TEMPLATES_USE=en. Ids and dependencies are read from the server's markdown answers.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start, split, deps  # noqa: E402


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
