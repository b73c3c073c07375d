#!/usr/bin/env python3
"""mcp-shrimp-task-manager: a task name longer than 100 characters is refused.

asks: Does `split_tasks` refuse a task whose name is 200 crab emoji (200 Unicode scalar values,
400 UTF-16 units), and one whose name is 101 ASCII letters, creating neither?

Strict contract: S2 accepts a subject of 1 to 200 characters (Unicode scalar values). Storage:
DATA_DIR in a temporary folder; TEMPLATES_USE=en.
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
    results = []
    for name in ["\U0001f980" * 200, "a" * 101]:
        raw = [{"name": name, "description": "a description of ten or more characters",
                "implementationGuide": "x"}]
        r = s.call("split_tasks", {"updateMode": "append", "tasksRaw": json.dumps(raw)})
        made = re.search(r"\*\*ID:\*\* `" + UUID + "`", r.text) is not None
        log(f"name of {len(name)} characters: isError={r.is_error} made={made} {r.text[:160]!r}")
        results.append((len(name), "too_big" in r.text or "過長" in r.text, made))
    listed = s.call("list_tasks", {"status": "all"}).text
    none = re.search(UUID, listed) is None
    answer = all(ref and not made for _, ref, made in results) and none
    return answer, ("; ".join(f"{n}-character name refused={ref}, created={made}" for n, ref, made in results)
                    + f"; list empty afterwards: {none}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
