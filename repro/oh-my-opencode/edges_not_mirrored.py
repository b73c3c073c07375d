"""Claim omo-edges-not-mirrored: task_update {addBlockedBy: [A]} on task B is acknowledged with
B's blockedBy naming A, and A's blocks stays empty: the plugin writes an edge into one task only.
Asks: after B's addBlockedBy [A], is A's blocks still empty? Exit 0 with a JSON verdict."""
import _alone as X

steps = [
    lambda r: [("task_create", {"subject": "A"}), ("task_create", {"subject": "B"})],
    lambda r: [("task_update", {"id": X.task_id(r[0][1]), "addBlockedBy": [X.task_id(r[0][0])]}),
               ("task_get", {"id": X.task_id(r[0][0])})],
]


def judge(r, files):
    a_id, b_id = X.task_id(r[0][0]), X.task_id(r[0][1])
    b = X.answer(r[1][0]).get("task") or {}
    a = X.answer(r[1][1]).get("task") or {}
    return (b.get("blockedBy") == [a_id] and a.get("blocks") == [],
            f"B.blockedBy {b.get('blockedBy')}, A.blocks {a.get('blocks')} (A {a_id[:10]}…, B {b_id[:10]}…)")


X.run(steps, judge)
