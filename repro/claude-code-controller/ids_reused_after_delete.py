#!/usr/bin/env python3
"""claude-code-controller: a deleted task's id is handed out again after a restart.

asks: After tasks 1, 2 and 3 are created and task 3 deleted, does a controller of the team
init()ed afterwards give the id 3 to its first new task?

init() sets the next id to the highest task file's id plus one; nothing keeps the highest id ever
given (Claude Code keeps `.highwatermark`). Strict contract: S1. Found by taskproof run
(ids-never-reused-after-delete-and-restart).
"""
from _ccc import run

if __name__ == "__main__":
    run("ids_reused_after_delete.mjs")
