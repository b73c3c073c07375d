"""Shared by the @kazuph/mcp-taskmanager reproductions in this folder: the server started from its npm package with its tasks.json in a temporary folder, and the concurrent run two of them count in (no code of taskproof's)."""
import json
import threading
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, npm_bin, npm_package  # noqa: E402

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
