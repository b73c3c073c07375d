#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a three-task dependency cycle is accepted.

asks: With B depending on A and C on B (given at `split_tasks`), does `update_task` A with
`dependencies: [C]` answer "Success" and leave C on A's Dependencies line?

Strict contract: S7 expects `cycle` (shrimp_cycle_accepted.py shows the two-task cycle).
Storage: DATA_DIR in a temporary folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start, split, detail  # noqa: E402


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
