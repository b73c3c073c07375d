#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a completed task cannot be changed at all.

asks: With A and C completed (execute_task, verify_task), does `update_task` refuse both A
with `dependencies: [C]` (a completed dependency) and A with a new name, answering
"無法更新已完成的任務" (cannot update a completed task)?

Strict contract: a completed task may still be renamed (S4 is about status only), and it may
gain a blocker that is completed (S5 refuses only an unfinished one, as `blocked`). Storage:
DATA_DIR in a temporary folder; TEMPLATES_USE=en.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start, split, complete  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    ids = split(s, [("A", []), ("C", [])])
    a, c = ids["A"], ids["C"]
    log(f"A {complete(s, a)}, C {complete(s, c)}")
    deps = s.call("update_task", {"taskId": a, "dependencies": [c]})
    name = s.call("update_task", {"taskId": a, "name": "A renamed"})
    log(f"A deps [C]: isError={deps.is_error} {deps.text[:100]!r}")
    log(f"A renamed: isError={name.is_error} {name.text[:100]!r}")
    refused = lambda r: "無法更新已完成的任務" in r.text
    answer = refused(deps) and refused(name)
    return answer, (f"A and C completed; update A dependencies [C]: refused={refused(deps)}; "
                    f"rename A: refused={refused(name)}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
