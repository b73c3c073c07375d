#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a dependency on an id no task has is kept, whatever its form.

asks: Does `update_task` A with `dependencies: ["999"]` (no task has that id or name) answer
"Success" and leave `999` on A's Dependencies line (`get_task_detail`)?

taskproof's mapping gives the server a wire id it does not know as it is ("999", or an id of
another list), so this is what the server is asked in rt05 and edges-cannot-cross-lists
(shrimp_dangling_dependency_accepted.py shows the same for a UUID). Strict contract: S6
expects `dangling`. Storage: DATA_DIR in a temporary folder.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start, split, detail  # noqa: E402


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
