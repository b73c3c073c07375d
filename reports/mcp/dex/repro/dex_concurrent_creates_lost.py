#!/usr/bin/env python3
"""@zeeg/dex: two server processes on one storage lose acknowledged creates.

asks: When two `dex mcp` processes on one storage folder each create 20 tasks at the same
time, is at least one task whose `create_task` answered success missing from a later
`list_tasks {all: true}`, in at least one of 3 runs?

dex reads the whole tasks.jsonl, changes it in memory and writes it back (through one fixed
temporary name, tasks.jsonl.tmp) with no lock. Strict contract: S19 (linearizable writers).
The observed line also counts creates that answered an error ("Failed to write tasks").
"""
import threading
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from dex import DEFAULT_VERSION, start  # noqa: E402


def run_once(version, tmp, n=20):
    ss = [start(version, tmp) for _ in range(2)]
    acked, errors = [], []
    lock = threading.Lock()

    def writer(i):
        for k in range(n):
            r = ss[i].call("create_task", {"name": f"w{i}-{k}", "description": "x"})
            with lock:
                if r.is_error:
                    errors.append(r.text[:120])
                else:
                    acked.append(json.loads(r.text)["id"])

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s in ss:
        s.close()
    reader = start(version, tmp)
    listed = reader.call("list_tasks", {"all": True})
    reader.close()
    if listed.is_error:
        # The writers can leave tasks.jsonl unreadable ("is corrupted"): every task is gone
        # for a reader (dex_concurrent_writers_corrupt_the_store.py).
        log(f"list_tasks refused: {listed.text[:160]!r}")
        present = set()
    else:
        present = {t["id"] for t in json.loads(listed.text)}
    lost = [a for a in acked if a not in present]
    return len(acked), len(errors), len(lost)


def body(version, tmp):
    import os
    runs, lost_runs, parts = 3, 0, []
    for r in range(runs):
        d = os.path.join(tmp, f"run{r}")
        os.makedirs(d)
        acked, errors, lost = run_once(version, d)
        log(f"run {r + 1}: {acked} creates acknowledged, {errors} answered an error, {lost} acknowledged ones missing")
        parts.append(f"{lost}/{acked}")
        lost_runs += lost > 0
    return lost_runs > 0, (f"acknowledged creates missing afterwards in {lost_runs} of {runs} runs "
                           f"(lost/acknowledged per run: {', '.join(parts)})")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-dex-")
