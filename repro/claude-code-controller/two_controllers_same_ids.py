#!/usr/bin/env python3
"""claude-code-controller: two controllers on one team hand out the same id, and the second
task replaces the first.

asks: With two programs each holding a ClaudeCodeController of one team, both init()ed before
either creates, does the second program's createTask get the id the first one's just got, and is
the first task's file then the second task?

The package counts the next id once, in TaskManager.init(), from the task files present, and keeps
it in memory; it takes no lock. Strict contract: S1 and S19. Found by taskproof run
(two-processes-creating-get-different-ids, concurrent-creates-get-unique-ids).
"""
from _ccc import run

if __name__ == "__main__":
    run("two_controllers_same_ids.mjs")
