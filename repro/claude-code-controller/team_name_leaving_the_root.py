#!/usr/bin/env python3
"""claude-code-controller: a team named ".." writes its task outside ~/.claude/tasks.

asks: Does a controller of the team ".." accept createTask and write the task's file into
~/.claude itself (the parent of the tasks folder) rather than refusing the name?

The package joins the team name to ~/.claude/tasks unchecked. Strict contract: S13 (a list
name that would leave the root is refused, invalid). Found by taskproof fuzz
(reports/fuzz-recall.md, the finding fuzz-eecec1ab172e, where the answer's id was "NaN").
"""
from _ccc import run

if __name__ == "__main__":
    run("team_name_leaving_the_root.mjs")
