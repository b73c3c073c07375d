#!/usr/bin/env python3
"""@kazuph/mcp-taskmanager: two server processes hand out one id to two tasks.

asks: When two server processes on one tasks.json each add 25 tasks to one request at the
same time, are two acknowledged adds given the same task id, in at least one of 3 runs?

Each call re-reads tasks.json, takes the highest id + 1 and rewrites the whole file
(fs.writeFile, no lock, no rename). Strict contract: S1, S19 (created ids are unique).
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
