#!/usr/bin/env python3
"""mcp-shrimp-task-manager: two server processes on one data folder lose acknowledged creates.

asks: When two server processes with one DATA_DIR each create 15 tasks (`split_tasks`
append, one task a call) at the same time, is at least one acknowledged task missing from a
later `list_tasks {status: "all"}`, in at least one of 3 runs?

Every call reads tasks.json, changes it in memory and writes it whole (fs.writeFile, no
lock). A split_tasks answer whose "Task List" lacks the new task (seen under load: the
list is read back from a file another process is writing) is not counted as acknowledged.
The file can also be left as invalid JSON, after which list_tasks answers "Error occurred:
Unexpected non-whitespace character after JSON …" and every task is missing. Strict contract:
S18, S19.
Storage: DATA_DIR (absolute) in a temporary folder; TEMPLATES_USE=en. Ids and dependencies
are read from the server's markdown answers.
"""
import os
import threading
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from shrimp import DEFAULT_VERSION, UUID, start, split  # noqa: E402


def run_once(version, tmp, n=15):
    ss = [start(version, tmp) for _ in range(2)]
    acked, other = [], []
    lock = threading.Lock()

    def writer(i):
        for k in range(n):
            name = f"w{i}-{k}"
            try:
                got = split(ss[i], [(name, [])])
                with lock:
                    acked.append(got[name])
            except ValueError as e:
                with lock:
                    other.append(str(e)[:120])

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s in ss:
        s.close()
    reader = start(version, tmp)
    answer = reader.call("list_tasks", {"status": "all"})
    reader.close()
    listed = set(re.findall(r"\*\*ID:\*\* `(" + UUID + ")`", answer.text))
    if not listed:
        log(f"list_tasks found no task: isError={answer.is_error} {answer.text[:200]!r}")
    return acked, other, [a for a in acked if a not in listed]


def body(version, tmp):
    runs, hit, parts = 3, 0, []
    for r in range(runs):
        d = os.path.join(tmp, f"run{r}")
        os.makedirs(d)
        acked, other, lost = run_once(version, d)
        log(f"run {r + 1}: {len(acked)} creates acknowledged, {len(other)} answers without the new task id (not counted) "
            f"{other[:1]}, {len(lost)} acknowledged missing")
        parts.append(f"{len(lost)}/{len(acked)}")
        hit += bool(lost)
    return hit > 0, f"acknowledged creates missing afterwards in {hit} of {runs} runs (lost/acknowledged per run: {', '.join(parts)})"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-shrimp-")
