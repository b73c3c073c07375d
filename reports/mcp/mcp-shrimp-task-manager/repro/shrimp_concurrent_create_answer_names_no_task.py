#!/usr/bin/env python3
"""mcp-shrimp-task-manager: under concurrent writers a successful create can name no task.

asks: When four server processes with one DATA_DIR each create 20 tasks (`split_tasks` append,
one task a call) at the same time, is at least one answer that is not an error (and not
"Error occurred"/"參數格式錯誤") missing the new task's **ID:**, in at least one of 3 runs?

Seen by taskproof against mappings/mcp-shrimp-task-manager.toml as an error of the target (the
answer "\\n\\n\\n" names no task). Storage: DATA_DIR in a temporary folder.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402

PACKAGE, DEFAULT_VERSION = "mcp-shrimp-task-manager", "1.0.21"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def start(version, tmp, data="data"):
    folder = npm_package(PACKAGE, version)
    s = McpServer([npm_bin(folder, "mcp-shrimp-task-manager")], cwd=tmp,
                  env={"HOME": tmp, "DATA_DIR": f"{tmp}/{data}", "TEMPLATES_USE": "en"})
    s.initialize()
    return s


def split(s, tasks):
    """split_tasks in append mode; returns {name: id} read from the answer's Task List."""
    raw = [{"name": n, "description": f"{n}: a description of ten or more characters",
            "implementationGuide": "x", "dependencies": deps} for n, deps in tasks]
    r = s.call("split_tasks", {"updateMode": "append", "tasksRaw": json.dumps(raw)})
    found = dict(re.findall(r"### Task \d+: (.+)\n\n\*\*ID:\*\* `(" + UUID + ")`", r.text))
    if any(n not in found for n, _ in tasks):
        raise ValueError(f"split_tasks answer not understood: {r.text[:300]!r}")
    return found


def detail(s, tid):
    return s.call("get_task_detail", {"taskId": tid}).text


def status(s, tid):
    m = re.search(r"\*\*Status:\*\* (\w+)", detail(s, tid))
    return m.group(1) if m else None


def complete(s, tid):
    s.call("execute_task", {"taskId": tid})
    s.call("verify_task", {"taskId": tid, "score": 100,
                           "summary": "Completed for a reproduction of a taskproof finding."})
    return status(s, tid)


def body(version, tmp):
    import os
    import threading
    runs, hits, parts = 3, 0, []
    for n in range(runs):
        d = os.path.join(tmp, f"run{n}")
        os.makedirs(d)
        ss = [start(version, d) for _ in range(4)]
        blank, lock = [], threading.Lock()

        def writer(i):
            for k in range(20):
                raw = [{"name": f"w{i}-{k}", "description": "a description of ten or more characters",
                        "implementationGuide": "x"}]
                r = ss[i].call("split_tasks", {"updateMode": "append", "tasksRaw": json.dumps(raw)})
                failed = r.is_error or r.text.startswith("Error occurred") or "參數格式錯誤" in r.text
                if not failed and "**ID:**" not in r.text:
                    with lock:
                        blank.append(r.text[:40])

        ts = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for s in ss:
            s.close()
        log(f"run {n + 1}: {len(blank)} successful answers without an id, e.g. {blank[:2]!r}")
        hits += bool(blank)
        parts.append(str(len(blank)))
    return hits > 0, (f"successful creates naming no task in {hits} of {runs} runs of 4 x 20 "
                      f"(per run: {', '.join(parts)})")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
