"""Claim omo-completed-task-reopens: a completed task can be set back to pending (and
in_progress) with task_update; the plugin checks no transition.
Asks: after status completed, does task_update {status: pending} succeed and leave it pending?
Exit 0 with a JSON verdict."""
import _alone as X

steps = [
    lambda r: [("task_create", {"subject": "done once"})],
    lambda r: [("task_update", {"id": X.task_id(r[0][0]), "status": "completed"}),
               ("task_update", {"id": X.task_id(r[0][0]), "status": "pending"})],
]


def judge(r, files):
    done, reopened = (X.answer(x) for x in r[1])
    s1, s2 = ((x.get("task") or {}).get("status") for x in (done, reopened))
    return (s1 == "completed" and s2 == "pending", f"after complete {s1}, after reopen {s2}")


X.run(steps, judge)
