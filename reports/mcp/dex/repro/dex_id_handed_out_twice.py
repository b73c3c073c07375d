#!/usr/bin/env python3
"""@zeeg/dex: is an id ever handed out a second time?

asks: Among 150 `create_task` calls, with every task deleted (`update_task {delete: true}`)
after each batch of 50 and the server restarted between batches, is any id handed out
that an earlier create had already been given?

dex ids are 8 random characters of [0-9a-z] (nanoid customAlphabet); nothing checks a new
id against existing ones, but a repeat in 150 draws is not expected (about 1 in 10^10).
Strict contract: S1. Answer expected: no (the register's example claim is not confirmed).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import log, run_repro  # noqa: E402
from dex import DEFAULT_VERSION, start  # noqa: E402


def body(version, tmp):
    seen, repeats = set(), []
    for batch in range(3):
        s = start(version, tmp)
        ids = []
        for k in range(50):
            tid = json.loads(s.call("create_task", {"name": f"t{batch}-{k}", "description": "x"}).text)["id"]
            if tid in seen:
                repeats.append(tid)
            seen.add(tid)
            ids.append(tid)
        for tid in ids:
            r = s.call("update_task", {"id": tid, "delete": True})
            if r.is_error:
                raise ValueError(f"delete {tid} failed: {r.text[:120]}")
        s.close()
        log(f"batch {batch + 1}: 50 created, 50 deleted, server restarted; repeats so far {len(repeats)}")
    return bool(repeats), (f"{len(seen)} distinct ids in 150 creates over 3 restarts with deletes; "
                           f"{len(repeats)} handed out twice")


if __name__ == "__main__":
    run_repro(body, DEFAULT_VERSION, prefix="repro-dex-")
