"""Claim omo-concurrent-updates-lose-changes: four OpenCode processes, each making 25 task_update
calls that add one metadata key to the same task (storage_path at one folder), lose acknowledged
keys: an update answered with the task holding its key is missing from the final task. The
plugin's lock is a `.lock` file created exclusively and then written with JSON; a process that
finds it empty or unparsable deletes it as stale, so two can hold it at once (updates that
could not take the lock answer `task_lock_unavailable` and are not counted).
Asks: is at least one acknowledged key missing from the final task, in any of up to 3 runs?
Exit 0 with a JSON verdict."""
import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C  # noqa: E402
import opencode as O  # noqa: E402
from _alone import OPENCODE, PLUGIN, answer, task_id  # noqa: E402

WRITERS, UPDATES = 4, 25


def one_run(inst):
    folder = C.temp_dir("repro-omo-list-")
    (created,), = O.run_steps(inst, folder, [lambda r: [("task_create", {"subject": "shared"})]])
    tid = task_id(created)
    results = [None] * WRITERS

    def writer(w):
        steps = [(lambda i: (lambda r: [("task_update", {"id": tid, "metadata": {f"w{w}_{i}": i}})]))(i)
                 for i in range(UPDATES)]
        results[w] = O.run_steps(inst, folder, steps, timeout=600)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (final,), = O.run_steps(inst, folder, [lambda r: [("task_get", {"id": tid})]])
    kept = (answer(final).get("task") or {}).get("metadata") or {}
    acked, busy, lost = 0, 0, []
    for w, steps in enumerate(results):
        for i, (res,) in enumerate(steps or []):
            a = answer(res)
            if a.get("error") == "task_lock_unavailable":
                busy += 1
            elif f"w{w}_{i}" in ((a.get("task") or {}).get("metadata") or {}):
                acked += 1
                if f"w{w}_{i}" not in kept:
                    lost.append(f"w{w}_{i}")
    return acked, busy, lost


def main():
    a = C.parse_args(PLUGIN)
    load = C.loadavg()
    inst = O.install(a.version, OPENCODE)
    runs = []
    for _ in range(3):
        acked, busy, lost = one_run(inst)
        runs.append(f"{acked} acknowledged, {busy} task_lock_unavailable, {len(lost)} lost {lost[:4]}")
        if lost:
            break
    C.finish(a.version, any(" 0 lost" not in r for r in runs),
             f"{WRITERS} processes x {UPDATES} updates: " + "; ".join(runs) + f"; opencode {OPENCODE}; load {load}")


C.run_main(main, PLUGIN)
