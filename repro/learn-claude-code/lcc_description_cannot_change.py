#!/usr/bin/env python3
"""learn-claude-code s07: a task's description cannot be changed.

asks: Does TaskManager.update refuse a description (it takes only status, add_blocked_by and
add_blocks), so that no call of the lesson's changes a description after creation?

Strict contract: S11 (an update sets any field). Found by taskproof fuzz as the adapter's
`unsupported` (reports/fuzz-recall.md).
"""
import json
from _lesson import run


def body(s07, folder):
    m = s07.TaskManager(folder)
    one = json.loads(m.create("one", "first"))["id"]
    try:
        m.update(one, description="second")
        return False, "update(description=...) accepted"
    except TypeError as e:
        return True, f"update(description=...) refused: {e}"


if __name__ == "__main__":
    run(body)
