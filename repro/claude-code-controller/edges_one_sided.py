#!/usr/bin/env python3
"""claude-code-controller: edges given at creation are one-sided and a delete leaves its id behind.

asks: Does createTask with blockedBy [blocker] leave the blocker's blocks empty, and does
tasks.delete of a task that blocks another leave its id in the other task's blockedBy, and does
tasks.delete of an id no task has succeed?

Only tasks.addBlocks writes both sides of an edge. Strict contract: S8, S10. Found by taskproof
run (rt03-blocks, edges-mirrored-from-either-side, rt07-deletion,
delete-removes-the-id-from-both-sides) and taskproof fuzz.
"""
from _ccc import run

if __name__ == "__main__":
    run("edges_one_sided.mjs")
