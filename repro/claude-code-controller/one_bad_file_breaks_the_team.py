#!/usr/bin/env python3
"""claude-code-controller: one task file that does not parse makes init() and tasks.list() fail.

asks: In a team task folder with one whole task file and one cut short, do both a new
controller's init() and tasks.list() throw, so that no task of the team can be listed and no
controller of it started?

The package parses every `*.json` of the folder with JSON.parse and lets the first error end the
call; init() lists the folder to count the next id. Strict contract: S15. Found by taskproof run
(unreadable-task-files-are-named-corrupt, stray-files-and-folders-are-skipped).
"""
from _ccc import run

if __name__ == "__main__":
    run("one_bad_file_breaks_the_team.mjs")
