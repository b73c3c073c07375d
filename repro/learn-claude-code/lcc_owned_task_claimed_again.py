#!/usr/bin/env python3
"""learn-claude-code s11: claim_task takes a task another agent already owns.

asks: With a task made by s07's TaskManager and claimed by agent-0 through lesson s11's
`claim_task`, does a second `claim_task` by agent-1 succeed and make agent-1 its owner?

s11's claim_task checks only that the file exists, then writes the new owner and
`in_progress` (under a lock, so the write is whole). Strict contract: S20 (a claim of a task
another owns is refused, `conflict`). Found by taskproof fuzz (reports/fuzz-recall.md, the
finding fuzz-5413b590e288: the same owner's second claim answered, where the contract says
conflict).
"""
import json
from _lesson import load, run


def body(s07, folder):
    s11 = load("s11_autonomous_agents")
    manager = s07.TaskManager(folder)
    made = json.loads(manager.create("Write the report"))
    s11.TASKS_DIR = folder
    first = s11.claim_task(made["id"], "agent-0")
    second = s11.claim_task(made["id"], "agent-1")
    owner = json.loads((folder / f"task_{made['id']}.json").read_text()).get("owner")
    return (owner == "agent-1" and not second.startswith("Error"),
            f"first claim: {first!r}; second, by agent-1: {second!r}; owner now {owner!r}")


if __name__ == "__main__":
    run(body)
