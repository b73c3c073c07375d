#!/usr/bin/env python3
"""claude-code-controller: two programs updating one task at once leave its file unparsable.

asks: With two programs updating task 1 of one team at once through tasks.update (200 updates
each, one the subject, one the owner), is 1.json left a file that does not parse afterwards, in
at least one of 10 runs?

The package writes a task file in place (fs.writeFile truncates it, then writes) and takes no
lock: two writes that overlap leave the shorter content followed by the longer one's tail, and
every reader in between sees an empty or partial file (its own update() then throws a
SyntaxError). One such file then makes init() and tasks.list() of the team throw
(one_bad_file_breaks_the_team.py). Strict contract: S18, S19. Found by taskproof race
(reports/claude-code-controller/0.3.0/race.txt).
"""
from _ccc import run

if __name__ == "__main__":
    run("concurrent_updates_corrupt_the_file.mjs", timeout=170)
