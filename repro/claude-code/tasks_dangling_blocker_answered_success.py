"""Claim cc-tasks-dangling-blocker-answered-success: TaskUpdate answers success to a blocker id no
task has (found by taskproof fuzz, reports/fuzz-recall.md; the 2.1.17 runtime test's rt05).

Print mode, one named list. Task 1. TaskUpdate {taskId: 1, addBlockedBy: ["99"]}. Answer yes
when the call answers success (not an error); what 1.json's blockedBy then holds is reported.
Strict contract: S6 expects `dangling`.
"""
from _tasks import field, files, run, verdict


def body(s):
    one = s.create("one")[2]
    r = s.call("TaskUpdate", {"taskId": one, "addBlockedBy": ["99"]})
    by = field(files(s), one, "blockedBy") or []
    return (not r[0]), f"1 addBlockedBy [99] -> {verdict(r)} ({r[1][:60]!r}); 1.json blockedBy {by}"


if __name__ == "__main__":
    run(body)
