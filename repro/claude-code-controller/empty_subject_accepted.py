#!/usr/bin/env python3
"""claude-code-controller: a task with an empty subject is created.

asks: Does createTask accept a subject of "" and write the task?

Strict contract: S2 (a subject must be 1 to 200 characters; an empty one is invalid). Found by
taskproof fuzz (reports/fuzz-recall.md, the finding fuzz-3f45c3ab0b31).
"""
from _ccc import run

if __name__ == "__main__":
    run("empty_subject_accepted.mjs")
