#!/usr/bin/env python3
"""mcp-shrimp-task-manager: under concurrent writers a successful create can name no task.

asks: When four server processes with one DATA_DIR each create 20 tasks (`split_tasks` append,
one task a call) at the same time, is at least one answer that is not an error (and not
"Error occurred"/"參數格式錯誤") missing the new task's **ID:**, in at least one of 3 runs?

Seen by taskproof against mappings/mcp-shrimp-task-manager.toml as an error of the target (the
answer "\\n\\n\\n" names no task). Storage: DATA_DIR in a temporary folder.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, start  # noqa: E402


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
