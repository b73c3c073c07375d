#!/usr/bin/env python3
"""claude-code-controller: the dependency graph is not checked.

asks: Does the package accept a two-task cycle (tasks.addBlocks(a, [b]) then addBlocks(b, [a])),
a task that blocks itself (addBlocks(a, [a])), and createTask with a blocker that does not exist
(blockedBy ["99"], kept as given)?

Strict contract: S6, S7. Found by taskproof run (rt04-circular-dependency, self-edge-is-a-cycle,
rt05-non-existent-references) and taskproof fuzz.
"""
from _ccc import run

if __name__ == "__main__":
    run("unchecked_graph.mjs")
