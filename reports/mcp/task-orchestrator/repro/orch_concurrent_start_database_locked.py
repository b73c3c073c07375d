#!/usr/bin/env python3
"""@allpepper/task-orchestrator: two servers started at once on a new database can fail.

asks: When two servers are started at the same moment on one new TASK_ORCHESTRATOR_HOME (as
two agents starting together), and each is sent `initialize` and one `manage_container`
create, does at least one of them exit during start-up with "database is locked" (SQLITE_BUSY,
on `PRAGMA journal_mode = WAL`) or answer "database is locked", in at least one of 10 tries?

Seen by taskproof as an error of the target in two-processes-creating-get-different-ids (the
server exited before answering initialize) and as refusals in its race. Started as `bun
src/server.ts --stdio`.
"""
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpError, McpServer, log, npm_bin, npm_package, run_repro  # noqa: E402
from orch import PACKAGE, DEFAULT_VERSION, BUN  # noqa: E402

TRIES = 10


def body(version, tmp):
    folder = npm_package(PACKAGE, version, bins=(BUN,))
    server_ts = Path(folder) / "node_modules" / PACKAGE / "src" / "server.ts"
    hits, seen = 0, []
    for n in range(TRIES):
        home = os.path.join(tmp, f"try{n}")
        os.makedirs(home)
        outcome = [None, None]

        def one(i):
            s = McpServer([npm_bin(folder, "bun"), str(server_ts), "--stdio"], cwd=home,
                          env={"HOME": home, "TASK_ORCHESTRATOR_HOME": f"{home}/.task-orchestrator"})
            try:
                s.initialize()
                r = s.call("manage_container", {"operation": "create", "containerType": "task",
                                                "title": f"t{i}", "summary": "s", "priority": "MEDIUM",
                                                "complexity": 1})
                outcome[i] = "locked" if "database is locked" in r.text else "ok"
            except McpError as e:
                outcome[i] = "locked" if "database is locked" in s.stderr_text() else f"failed: {e}"
            finally:
                s.close()

        ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        log(f"try {n + 1}: {outcome}")
        if "locked" in outcome:
            hits += 1
        seen.append("/".join(str(o)[:6] for o in outcome))
    return hits > 0, f"a server failed with 'database is locked' in {hits} of {TRIES} tries of two at once"


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-orch-")
