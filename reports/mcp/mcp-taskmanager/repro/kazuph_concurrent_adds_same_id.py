#!/usr/bin/env python3
"""@kazuph/mcp-taskmanager: two server processes hand out one id to two tasks.

asks: When two server processes on one tasks.json each add 25 tasks to one request at the
same time, are two acknowledged adds given the same task id, in at least one of 3 runs?

Each call re-reads tasks.json, takes the highest id + 1 and rewrites the whole file
(fs.writeFile, no lock, no rename). Strict contract: S1, S19 (created ids are unique).
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
        _, acked, refused, _, _ = run_once(version, d)
        ids = [i for i, _ in acked]
        dups = len(ids) - len(set(ids))
        log(f"run {r + 1}: {len(acked)} adds acknowledged, {len(refused)} answered an error status "
            f"({', '.join(sorted(set(refused)))}), {dups} acknowledged ids already given to another task")
        parts.append(f"{dups}/{len(acked)}")
        hit_runs += dups > 0
    return hit_runs > 0, (f"same id acknowledged for two tasks in {hit_runs} of {runs} runs "
                          f"(repeated/acknowledged per run: {', '.join(parts)})")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-kazuph-")
