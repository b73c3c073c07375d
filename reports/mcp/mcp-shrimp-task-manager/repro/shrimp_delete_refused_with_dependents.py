#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a task that another task depends on cannot be deleted.

asks: With B depending on A (both pending), does `delete_task` A answer a refusal (isError true, "## Failure" and
"無法刪除此任務，因為以下任務依賴於它…") and keep A?

Strict contract: S10 expects delete to succeed and remove A's id from B's dependencies.
Storage: DATA_DIR (absolute) in a temporary folder; TEMPLATES_USE=en. Ids and dependencies
are read from the server's markdown answers.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start, split  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    ids = split(s, [("A", []), ("B", ["A"])])
    a = ids["A"]
    r = s.call("delete_task", {"taskId": a})
    still = s.call("get_task_detail", {"taskId": a})
    log(f"delete A: isError={r.is_error} {r.text.strip()[:200]!r}; get A afterwards: isError={still.is_error}")
    refused = "## Success" not in r.text
    return refused and not still.is_error, (f"delete of A (B depends on it): refused={refused}, isError={r.is_error}; "
                                            f"A still there: {not still.is_error}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
