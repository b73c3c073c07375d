"""Claim omo-concurrent-creates-refused: 32 task_create calls at once on one list
(storage_path at an empty folder), made two ways: (a) one model message with all 32 calls to
one OpenCode; (b) 4 OpenCode processes started together, each making 8 calls one after the
other. The plugin's `.lock` is taken with one exclusive create and no wait, so a call that
finds it held is refused with task_lock_unavailable instead of waiting (public report
code-yeongyu/oh-my-openagent#6157, on 4.18.2; PR #8054 makes the lock wait).
Asks: is at least one of the creates, in (a) or (b), refused with task_lock_unavailable?
Also reported for each: creates acknowledged, distinct ids, and T-*.json files on disk.
Exit 0 with a JSON verdict."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C  # noqa: E402
import opencode as O  # noqa: E402
from _alone import OPENCODE, PLUGIN, answer, files  # noqa: E402

CALLS, PROCESSES = 32, 4


def count(results, folder):
    refused = sum(1 for r in results if answer(r).get("error") == "task_lock_unavailable")
    ids = {(answer(r).get("task") or {}).get("id") for r in results if not r[0]} - {None}
    other = [r[1][:120] for r in results
             if "task" not in answer(r) and answer(r).get("error") != "task_lock_unavailable"]
    text = (f"{len(ids)} acknowledged with distinct ids, {refused} refused task_lock_unavailable, "
            f"{len(other)} other answers {other[:2]}, {len(files(folder))} T-*.json files")
    return refused, text


def one_message(inst):
    folder = C.temp_dir("repro-omo-list-")
    calls = [("task_create", {"subject": f"job {i}"}) for i in range(CALLS)]
    results = O.run_calls(inst, folder, calls, timeout=600)
    if len(results) != CALLS:
        raise C.CouldNotRun(f"{len(results)} of {CALLS} tool results came back")
    return count(results, folder)


def processes(inst):
    folder = C.temp_dir("repro-omo-list-")
    per = CALLS // PROCESSES
    out = [None] * PROCESSES

    def writer(w):
        steps = [(lambda i: (lambda r: [("task_create", {"subject": f"w{w}-{i}"})]))(i) for i in range(per)]
        out[w] = O.run_steps(inst, folder, steps, timeout=900)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(PROCESSES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = [res for steps in out for (res,) in (steps or [])]
    if len(results) != CALLS:
        raise C.CouldNotRun(f"{len(results)} of {CALLS} tool results came back")
    return count(results, folder)


def main():
    a = C.parse_args(PLUGIN)
    load = C.loadavg()
    inst = O.install(a.version, OPENCODE)
    ra, ta = one_message(inst)
    rb, tb = processes(inst)
    observed = (f"(a) {CALLS} task_create in one message: {ta}; (b) {PROCESSES} OpenCode processes x "
                f"{CALLS // PROCESSES}: {tb}; opencode {OPENCODE}; load {load}")
    C.finish(a.version, ra + rb > 0, observed)


C.run_main(main, sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else PLUGIN)
