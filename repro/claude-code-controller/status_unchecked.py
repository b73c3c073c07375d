#!/usr/bin/env python3
"""claude-code-controller: status changes are not checked.

asks: Does tasks.update let a task whose blocker is still pending become in_progress, then
completed, and the completed task go back to pending?

Strict contract: S4 (completed is final), S5 (AND-blocking). Found by taskproof run
(blockers-must-be-completed-first, completed-is-final, rt02-status-updates) and taskproof fuzz.
"""
from _ccc import run

if __name__ == "__main__":
    run("status_unchecked.mjs")
