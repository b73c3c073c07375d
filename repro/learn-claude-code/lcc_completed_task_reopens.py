#!/usr/bin/env python3
"""learn-claude-code s07: a completed task can be set back to in_progress.

asks: After TaskManager.update(id, status="completed"), does update(id, status="in_progress")
succeed and leave the task in_progress?

Strict contract: S4 (completed is final) expects `transition`. Found by taskproof fuzz
(reports/fuzz-recall.md).
"""
import json
from _lesson import run


def body(s07, folder):
    m = s07.TaskManager(folder)
    one = json.loads(m.create("one"))["id"]
    m.update(one, status="completed")
    t = json.loads(m.update(one, status="in_progress"))
    return t["status"] == "in_progress", f"completed, then in_progress -> status {t['status']}"


if __name__ == "__main__":
    run(body)
