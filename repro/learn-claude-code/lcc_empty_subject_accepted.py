#!/usr/bin/env python3
"""learn-claude-code s07: a task with an empty subject is created.

asks: Does TaskManager.create("") create a task (with an id) rather than refuse?

Strict contract: S2 expects `invalid` for a subject outside 1 to 200 characters. Found by
taskproof fuzz (reports/fuzz-recall.md).
"""
import json
from _lesson import run


def body(s07, folder):
    m = s07.TaskManager(folder)
    t = json.loads(m.create(""))
    return bool(t.get("id")) and t["subject"] == "", f"create('') -> task {t['id']} subject {t['subject']!r}"


if __name__ == "__main__":
    run(body)
