#!/usr/bin/env python3
"""@zeeg/dex: concurrent writers can leave tasks.jsonl unreadable.

asks: When four `dex mcp` processes on one storage folder each create tasks and add blockers
between them at the same time (25 requests each), does a fresh process's `list_tasks {all:
true}` answer that the data file "is corrupted", in at least one of 8 runs?

dex rewrites the whole tasks.jsonl through one fixed temporary name (tasks.jsonl.tmp) with no
lock, so two writers can interleave their bytes in it. Seen by `taskproof race` against
mappings/dex.toml ("failed to list the final state: ... is corrupted: Invalid JSON on line
22"). Strict contract: S18 (a whole file after every write), S19. The observed line also
counts requests that answered an error.
"""
import json
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from dex import DEFAULT_VERSION, start  # noqa: E402

WRITERS, OPS = 4, 25


def run_once(version, tmp):
    seed = start(version, tmp)
    base = json.loads(seed.call("create_task", {"name": "seed", "description": "x"}).text)["id"]
    seed.close()
    ss = [start(version, tmp) for _ in range(WRITERS)]
    errors = []
    lock = threading.Lock()

    def writer(i):
        mine = []
        for k in range(OPS):
            if k % 2 == 0 or not mine:
                r = ss[i].call("create_task", {"name": f"w{i}-{k}", "description": "x",
                                               "blocked_by": [base]})
                if not r.is_error:
                    mine.append(json.loads(r.text)["id"])
            else:
                r = ss[i].call("update_task", {"id": mine[-1], "add_blocked_by": [mine[0]]})
            if r.is_error:
                with lock:
                    errors.append(r.text[:100])

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s in ss:
        s.close()
    reader = start(version, tmp)
    r = reader.call("list_tasks", {"all": True})
    reader.close()
    corrupt = r.is_error and "corrupted" in r.text
    log(f"{len(errors)} requests answered an error; list: isError={r.is_error} {r.text[:160]!r}")
    return corrupt, len(errors)


def body(version, tmp):
    runs, hits, parts = 8, 0, []
    for n in range(runs):
        d = os.path.join(tmp, f"run{n}")
        os.makedirs(d)
        corrupt, errors = run_once(version, d)
        hits += corrupt
        parts.append(f"{'corrupted' if corrupt else 'readable'} ({errors} errors)")
    return hits > 0, (f"the store read back as corrupted in {hits} of {runs} runs of "
                      f"{WRITERS} writers x {OPS} requests: {', '.join(parts)}")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-dex-")
