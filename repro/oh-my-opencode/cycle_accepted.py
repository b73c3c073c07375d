"""Claim omo-cycle-accepted: two tasks can each be made to block the other (A addBlockedBy B,
then B addBlockedBy A) and a task can block itself; the plugin checks no cycle.
Asks: are both edges of the two-task cycle, and the self-edge, acknowledged and kept?
Exit 0 with a JSON verdict."""
import _alone as X

steps = [
    lambda r: [("task_create", {"subject": "A"}), ("task_create", {"subject": "B"})],
    lambda r: [("task_update", {"id": X.task_id(r[0][0]), "addBlockedBy": [X.task_id(r[0][1])]}),
               ("task_update", {"id": X.task_id(r[0][1]), "addBlockedBy": [X.task_id(r[0][0])]}),
               ("task_update", {"id": X.task_id(r[0][0]), "addBlocks": [X.task_id(r[0][0])]})],
]


def judge(r, files):
    a_id, b_id = X.task_id(r[0][0]), X.task_id(r[0][1])
    a1, b1, a2 = ((X.answer(x).get("task") or {}) for x in r[1])
    ok = b_id in (a1.get("blockedBy") or []) and a_id in (b1.get("blockedBy") or []) and a_id in (a2.get("blocks") or [])
    return (ok, f"A.blockedBy {len(a1.get('blockedBy') or [])} id(s), B.blockedBy {len(b1.get('blockedBy') or [])}, A.blocks itself {a_id in (a2.get('blocks') or [])}")


X.run(steps, judge)
