#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a task description shorter than 10 characters is refused.

asks: Does `split_tasks` refuse a task with the description "first" (5 characters), answering
"參數格式錯誤" (without isError) and creating nothing?

Strict contract: S2 takes any description string ("" when not given). Storage: DATA_DIR in a
temporary folder; TEMPLATES_USE=en.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, UUID, start  # noqa: E402


def body(version, tmp):
    s = start(version, tmp)
    raw = [{"name": "a", "description": "first", "implementationGuide": "x"}]
    r = s.call("split_tasks", {"updateMode": "append", "tasksRaw": json.dumps(raw)})
    refused = "參數格式錯誤" in r.text
    listed = s.call("list_tasks", {"status": "all"}).text
    made = re.search(UUID, listed) is not None
    log(f"split_tasks description \"first\": isError={r.is_error} {r.text[:200]!r}; a task listed: {made}")
    return refused and not made, (f"description \"first\": refused={refused} (isError={r.is_error}); "
                                  f"a task created: {made}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
