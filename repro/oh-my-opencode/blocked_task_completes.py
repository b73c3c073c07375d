"""Claim omo-blocked-task-completes: a task whose blockedBy names a pending task can be set
in_progress and then completed with task_update; the plugin checks no blocker.
Asks: is the blocked task completed while its blocker is still pending? Exit 0 with a JSON verdict."""
import _alone as X

steps = [
    lambda r: [("task_create", {"subject": "blocker"})],
    lambda r: [("task_create", {"subject": "blocked", "blockedBy": [X.task_id(r[0][0])]})],
    lambda r: [("task_update", {"id": X.task_id(r[1][0]), "status": "in_progress"}),
               ("task_update", {"id": X.task_id(r[1][0]), "status": "completed"}),
               ("task_get", {"id": X.task_id(r[0][0])})],
]


def judge(r, files):
    started, done, blocker = (X.answer(x) for x in r[2])
    status = (done.get("task") or {}).get("status")
    return (status == "completed" and (blocker.get("task") or {}).get("status") == "pending",
            f"start answered {str(started)[:80]!r}; complete: status {status}; blocker {(blocker.get('task') or {}).get('status')}")


X.run(steps, judge)
