"""Claim cc-tasks-cycle-accepted: TaskUpdate accepts a two-task dependency cycle (found by taskproof
fuzz, reports/fuzz-recall.md; the 2.1.17 runtime test's rt04).

Print mode, one named list. Tasks 1 and 2. TaskUpdate {taskId: 1, addBlockedBy: [2]}, then
{taskId: 2, addBlockedBy: [1]}. Answer yes when both calls succeed and the files show 1 blocked
by 2 and 2 blocked by 1. Strict contract: S7 expects the second refused (`cycle`).
"""
from _tasks import field, files, run, verdict


def body(s):
    one, two = (s.create(x)[2] for x in ("one", "two"))
    r1 = s.call("TaskUpdate", {"taskId": one, "addBlockedBy": [two]})
    r2 = s.call("TaskUpdate", {"taskId": two, "addBlockedBy": [one]})
    f = files(s)
    by = lambda i: field(f, i, "blockedBy") or []
    ok = (not r1[0]) and (not r2[0]) and two in by(one) and one in by(two)
    return ok, (f"1 addBlockedBy [2] -> {verdict(r1)}, 2 addBlockedBy [1] -> {verdict(r2)}; "
                f"blockedBy 1={by(one)} 2={by(two)}")


if __name__ == "__main__":
    run(body)
