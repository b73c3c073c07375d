#!/usr/bin/env python3
"""@kazuph/mcp-taskmanager: concurrent writers lose acknowledged tasks.

asks: When two server processes on one tasks.json each add 25 tasks to one request at the
same time, is a task the server acknowledged, or the task that existed before, missing
afterwards (tasks.json unreadable counts as missing), in at least one of 3 runs?

Each call re-reads tasks.json (an unreadable file is taken as an empty store) and rewrites
it whole with fs.writeFile (truncate, then write; no lock): a reader can see a half-written
file and the next write then replaces everything. Strict contract: S14, S18, S19.
"""
import json
import os
import threading
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402

PACKAGE, DEFAULT_VERSION = "@kazuph/mcp-taskmanager", "1.1.1"


def start(version, tmp):
    folder = npm_package(PACKAGE, version)
    s = McpServer([npm_bin(folder, "mcp-taskmanager")], cwd=tmp,
                  env={"HOME": tmp, "TASK_MANAGER_FILE_PATH": f"{tmp}/tasks.json"})
    s.initialize()
    return s


def run_once(version, tmp, n=25):
    seed = start(version, tmp)
    plan = seed.call("request_planning", {"originalRequest": "r", "tasks": [
        {"title": "seed", "description": "s"}]}).json()
    seed.close()
    req, seed_id = plan["requestId"], plan["tasks"][0]["id"]
    ss = [start(version, tmp) for _ in range(2)]
    acked, refused = [], []
    lock = threading.Lock()

    def writer(i):
        for k in range(n):
            j = ss[i].call("add_tasks_to_request", {"requestId": req, "tasks": [
                {"title": f"w{i}-{k}", "description": "x"}]}).json() or {}
            with lock:
                if j.get("status") == "tasks_added":
                    acked.append((j["newTasks"][0]["id"], f"w{i}-{k}"))
                else:
                    refused.append(j.get("message", "?"))

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s in ss:
        s.close()
    try:
        with open(os.path.join(tmp, "tasks.json")) as f:
            data = json.load(f)
        stored = {(t["id"], t["title"]) for r in data["requests"] for t in r["tasks"]}
        readable = True
    except ValueError:
        stored, readable = set(), False
    return seed_id, acked, refused, stored, readable


def body(version, tmp):
    runs, hit_runs, parts = 3, 0, []
    for r in range(runs):
        d = os.path.join(tmp, f"run{r}")
        os.makedirs(d)
        seed_id, acked, refused, stored, readable = run_once(version, d)
        missing = [a for a in acked if a not in stored]
        seed_kept = any(i == seed_id and t == "seed" for i, t in stored)
        log(f"run {r + 1}: {len(acked)} adds acknowledged, {len(refused)} answered an error status; "
            f"tasks.json {'readable' if readable else 'UNREADABLE'}; {len(missing)} acknowledged "
            f"tasks missing; seed task {'kept' if seed_kept else 'LOST'}")
        parts.append(f"{len(missing)}/{len(acked)}{'' if seed_kept else '+seed'}{'' if readable else ' (file unreadable)'}")
        hit_runs += bool(missing) or not seed_kept
    return hit_runs > 0, (f"acknowledged tasks lost in {hit_runs} of {runs} runs "
                          f"(missing/acknowledged per run: {'; '.join(parts)})")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-kazuph-")
