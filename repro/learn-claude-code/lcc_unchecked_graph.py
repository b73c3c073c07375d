#!/usr/bin/env python3
"""learn-claude-code s07: TaskManager.update checks nothing of the dependency graph.

asks: Does TaskManager.update accept, without an error, each of: a task blocking itself
(add_blocks [itself]), a blocker id no task has (add_blocked_by [99]), and starting a task whose
blocker is pending (status in_progress)?

Strict contract: S7 (cycle), S6 (dangling) and S5 (blocked) refuse each. Found by taskproof fuzz
(reports/fuzz-recall.md).
"""
import json
from _lesson import run


def body(s07, folder):
    m = s07.TaskManager(folder)
    one = json.loads(m.create("one"))["id"]
    two = json.loads(m.create("two"))["id"]
    seen, ok = [], True
    for what, call in [("self-block", lambda: m.update(one, add_blocks=[one])),
                       ("blocker 99", lambda: m.update(two, add_blocked_by=[99])),
                       ("start while blocked", lambda: m.update(two, add_blocked_by=[one], status="in_progress"))]:
        try:
            t = json.loads(call())
            seen.append(f"{what}: accepted (blocks {t['blocks']}, blockedBy {t['blockedBy']}, {t['status']})")
        except ValueError as e:
            ok = False
            seen.append(f"{what}: refused ({e})")
    return ok, "; ".join(seen)


if __name__ == "__main__":
    run(body)
