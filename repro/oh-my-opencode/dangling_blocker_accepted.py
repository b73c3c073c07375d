"""Claim omo-dangling-blocker-accepted: task_create and task_update accept a blockedBy naming a
task that does not exist (a well-formed T- id of no file) and keep it.
Asks: are both acknowledged with the missing id kept? Exit 0 with a JSON verdict."""
import _alone as X

GHOST = "T-00000000-0000-4000-8000-000000000000"
steps = [
    lambda r: [("task_create", {"subject": "waits on nothing", "blockedBy": [GHOST]}),
               ("task_create", {"subject": "another"})],
    lambda r: [("task_update", {"id": X.task_id(r[0][1]), "addBlockedBy": [GHOST]}),
               ("task_get", {"id": X.task_id(r[0][0])})],
]


def judge(r, files):
    updated, got = ((X.answer(x).get("task") or {}) for x in r[1])
    return (GHOST in (updated.get("blockedBy") or []) and GHOST in (got.get("blockedBy") or []),
            f"created with blockedBy {got.get('blockedBy')}, updated blockedBy {updated.get('blockedBy')}; files {len(files)}")


X.run(steps, judge)
