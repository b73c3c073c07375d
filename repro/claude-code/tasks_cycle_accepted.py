"""Claim cc-tasks-cycle-accepted: TaskUpdate accepts a two-task dependency cycle and a task
blocking itself (found by taskproof fuzz, reports/fuzz-recall.md; the 2.1.17 runtime test's rt04).

Print mode, one named list. Tasks 1, 2 and 3. TaskUpdate {taskId: 1, addBlockedBy: [2]}, then
{taskId: 2, addBlockedBy: [1]}, then {taskId: 3, addBlocks: [3]}. Answer yes when all succeed and
the files show 1 blocked by 2, 2 blocked by 1, and 3 blocking itself. Strict contract: S7
expects the second and third refused (`cycle`).
"""
from _tasks import field, files, run, verdict


def body(s):
    one, two, three = (s.create(x)[2] for x in ("one", "two", "three"))
    r1 = s.call("TaskUpdate", {"taskId": one, "addBlockedBy": [two]})
    r2 = s.call("TaskUpdate", {"taskId": two, "addBlockedBy": [one]})
    r3 = s.call("TaskUpdate", {"taskId": three, "addBlocks": [three]})
    f = files(s)
    by = lambda i: field(f, i, "blockedBy") or []
    self_blocks = three in (field(f, three, "blocks") or [])
    ok = (not r1[0]) and (not r2[0]) and (not r3[0]) and two in by(one) and one in by(two) \
        and self_blocks
    return ok, (f"1 addBlockedBy [2] -> {verdict(r1)}, 2 addBlockedBy [1] -> {verdict(r2)}, "
                f"3 addBlocks [3] -> {verdict(r3)}; blockedBy 1={by(one)} 2={by(two)}; "
                f"3 blocks itself: {self_blocks}")


if __name__ == "__main__":
    run(body)
