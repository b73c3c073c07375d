#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a started task cannot be set back to pending.

asks: Once `execute_task` has started a task (in_progress), does the server lack any way to set
it pending again: no tool but `list_tasks` (a filter) takes a status argument, and the task is
still in_progress after `update_task` is given `status: "pending"`?

Strict contract: S4 allows in_progress -> pending; taskproof's mapping answers it `unsupported`
(mappings/mcp-shrimp-task-manager.toml). Storage: DATA_DIR in a temporary folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start, split, status  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    taking = [f"{t['name']}.{p}" for t in s.list_tools()
              for p in (t.get("inputSchema") or {}).get("properties", {})
              if p.lower() in ("status", "state") and t["name"] != "list_tasks"]
    a = split(s, [("A", [])])["A"]
    s.call("execute_task", {"taskId": a})
    before = status(s, a)
    r = s.call("update_task", {"taskId": a, "status": "pending"})
    after = status(s, a)
    log(f"status arguments outside list_tasks: {taking}; started: {before}; "
        f"update_task status=pending: isError={r.is_error} {r.text[:120]!r}; now {after}")
    answer = not taking and before == "in_progress" and after == "in_progress"
    return answer, (f"no tool but list_tasks takes a status ({taking or 'none'}); started task "
                    f"{before}, after update_task status=pending still {after}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
