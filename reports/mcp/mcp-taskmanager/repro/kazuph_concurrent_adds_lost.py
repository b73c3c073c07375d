#!/usr/bin/env python3
"""@kazuph/mcp-taskmanager: concurrent writers lose acknowledged tasks.

asks: When two server processes on one tasks.json each add 25 tasks to one request at the
same time, is a task the server acknowledged, or the task that existed before, missing
afterwards (tasks.json unreadable counts as missing), in at least one of 3 runs?

Each call re-reads tasks.json (an unreadable file is taken as an empty store) and rewrites
it whole with fs.writeFile (truncate, then write; no lock): a reader can see a half-written
file and the next write then replaces everything. Strict contract: S14, S18, S19.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from kazuph import DEFAULT_VERSION, run_once  # noqa: E402


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
