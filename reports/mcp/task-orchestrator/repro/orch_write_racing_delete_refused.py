#!/usr/bin/env python3
"""@allpepper/task-orchestrator: a write racing a delete is refused with an error of no kind.

asks: When one server process deletes a task while another, at the same moment, updates that
task (with its current version, 1) or adds a dependency to it, is the second request ever
refused with something other than "not found" ("Update failed: version conflict", "database is
locked"), in 200 rounds of each, where it could only be answered ok (before the delete) or not
found (after it)?

Seen by taskproof's fuzzer as a concurrent finding (S19, fuzz-3844aae046f6): a session's update
answered with an error of no kind the contract knows where every order of the requests says
not_found. Two servers (`bun src/server.ts --stdio`) share one TASK_ORCHESTRATOR_HOME, as two
agents would.
"""
import sys
import threading
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402
from orch import BUN, DEFAULT_VERSION, PACKAGE, create  # noqa: E402

ROUNDS = 200


def body(version, tmp):
    folder = npm_package(PACKAGE, version, bins=(BUN,))
    server_ts = Path(folder) / "node_modules" / PACKAGE / "src" / "server.ts"

    def server():
        s = McpServer([npm_bin(folder, "bun"), str(server_ts), "--stdio"], cwd=tmp,
                      env={"HOME": tmp, "TASK_ORCHESTRATOR_HOME": f"{tmp}/.task-orchestrator"})
        s.initialize()
        return s

    deleter, writer = server(), server()
    other = create(deleter, "other")
    writes = {
        "update": lambda tid, n: ("manage_container", {
            "operation": "update", "containerType": "task", "id": tid, "version": 1,
            "title": f"u{n}"}),
        "add dependency": lambda tid, n: ("manage_dependency", {
            "operation": "create", "type": "BLOCKS", "fromId": other, "toId": tid}),
    }
    counts = Counter()
    for what, write in writes.items():
        for n in range(ROUNDS):
            tid = create(deleter, f"{what} {n}")
            answers = {}
            go = threading.Barrier(2)

            def delete():
                go.wait()
                answers["delete"] = deleter.call("manage_container", {
                    "operation": "delete", "containerType": "task", "id": tid}).json()

            def race():
                tool, args = write(tid, n)
                go.wait()
                answers["write"] = writer.call(tool, args).json()

            ts = [threading.Thread(target=f) for f in (delete, race)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            w = answers["write"]
            text = str(w.get("error") or w.get("message") or "")
            kind = ("ok" if w.get("success")
                    else "not found" if "not found" in text.lower() or "NOT_FOUND" in text
                    else text[:60])
            counts[(what, kind)] += 1
            if not answers["delete"].get("success"):
                counts[("delete", "refused")] += 1
    deleter.close()
    writer.close()
    odd = sum(v for (what, kind), v in counts.items() if kind not in ("ok", "not found", "refused"))
    seen = "; ".join(f"{w}: {k} {v}" for (w, k), v in sorted(counts.items()))
    log(f"{ROUNDS} rounds of each: {seen}")
    return odd > 0, f"{ROUNDS} rounds of each write racing a delete: {seen}"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-orch-")
