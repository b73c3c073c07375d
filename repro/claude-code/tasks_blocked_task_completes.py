"""Claim cc-tasks-blocked-task-completes: a task whose blocker is pending can be completed with
TaskUpdate (found by taskproof fuzz, reports/fuzz-recall.md; the 2.1.17 runtime test's rt06).

Print mode, one named list. Tasks 1 and 2, 2 blocked by 1 (pending); TaskUpdate {taskId: 2,
status: completed}. Answer yes when it succeeds and 2.json is completed while 1.json is
pending. Strict contract: S5 expects `blocked`.
"""
from _tasks import field, files, run, verdict


def body(s):
    one, two = (s.create(x)[2] for x in ("one", "two"))
    r1 = s.call("TaskUpdate", {"taskId": two, "addBlockedBy": [one]})
    r2 = s.call("TaskUpdate", {"taskId": two, "status": "completed"})
    f = files(s)
    st1, st2 = field(f, one, "status"), field(f, two, "status")
    return (not r1[0]) and (not r2[0]) and st2 == "completed" and st1 == "pending", (
        f"2 addBlockedBy [1] -> {verdict(r1)}, 2 completed -> {verdict(r2)}; status 1={st1} 2={st2}")


if __name__ == "__main__":
    run(body)
