"""Claim cc-tasks-completed-task-reopens: a completed task can be set back to pending or
in_progress with TaskUpdate (found by taskproof fuzz, reports/fuzz-recall.md; the 2.1.17 runtime
test's rt02).

Print mode, one named list. Task 1 completed, then TaskUpdate {status: in_progress}. Answer yes
when it succeeds and 1.json says in_progress. Strict contract: S4 expects `transition`.
"""
from _tasks import field, files, run, verdict


def body(s):
    one = s.create("one")[2]
    r1 = s.call("TaskUpdate", {"taskId": one, "status": "completed"})
    r2 = s.call("TaskUpdate", {"taskId": one, "status": "in_progress"})
    st = field(files(s), one, "status")
    return (not r1[0]) and (not r2[0]) and st == "in_progress", (
        f"completed -> {verdict(r1)}, then in_progress -> {verdict(r2)}; 1.json status {st}")


if __name__ == "__main__":
    run(body)
