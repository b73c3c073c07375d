#!/usr/bin/env python3
"""claude-code-controller: createTask ignores Claude Code's list lock and .highwatermark.

asks: In a team task folder holding Claude Code's `.lock`, its held lock `.lock.lock` and
`.highwatermark` 7 (Claude Code has handed out ids up to 7, and tasks 1 to 7 are deleted), does
createTask write task 1 at once, while the lock is held?

Claude Code's TaskCreate takes `.lock.lock` while it picks the next id, which it takes from the
task files and `.highwatermark` (docs/mcp.md, "Sharing a list with Claude Code"); the package
takes no lock for tasks (its proper-lockfile lock guards only the inboxes) and numbers from the
task files alone. Strict contract: S1, S19. Issue 48 of taskproof.
"""
from _ccc import run

if __name__ == "__main__":
    run("claude_code_lock_ignored.mjs")
