#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a dependency on an unknown task name is dropped without a word.

asks: Does `split_tasks` (append) with a task whose `dependencies` names a task that does not
exist create that task without any dependency and without an error or warning?

Strict contract: S6 expects `dangling` (and a failed request changes nothing).
Storage: DATA_DIR (absolute) in a temporary folder; TEMPLATES_USE=en. Ids and dependencies
are read from the server's markdown answers.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, UUID, start, deps  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    raw = [{"name": "C", "description": "C: a description of ten or more characters",
            "implementationGuide": "x", "dependencies": ["No task has this name"]}]
    r = s.call("split_tasks", {"updateMode": "append", "tasksRaw": json.dumps(raw)})
    m = re.search(r"### Task \d+: C\n\n\*\*ID:\*\* `(" + UUID + ")`", r.text)
    if not m:
        raise ValueError(f"split_tasks answer not understood: {r.text[:300]!r}")
    c = m.group(1)
    dc = deps(s, c)
    warned = "No task has this name" in r.text or "not found" in r.text.lower()
    log(f"split_tasks: isError={r.is_error}; mentions the unknown name: {warned}; C depends on {dc}")
    answer = not r.is_error and not warned and dc == []
    return answer, f"created C with deps ['No task has this name']: isError={r.is_error}, name mentioned={warned}, C dependencies={dc}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
