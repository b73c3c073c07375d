"""Claim cc-tasks-owned-task-taken-again: TaskUpdate sets owner and in_progress on a task that is
already in progress with an owner, whoever asks (found by taskproof fuzz, reports/fuzz-recall.md:
taskproof's claim is TaskUpdate {owner, status: in_progress}, Claude Code having no claim tool).

Print mode, one named list. Task 1; TaskUpdate {owner: a, status: in_progress}, then TaskUpdate
{owner: b, status: in_progress}. Answer yes when both succeed and 1.json's owner is b. Strict
contract: S20 expects the second refused (`conflict`).
"""
from _tasks import field, files, run, verdict


def body(s):
    one = s.create("one")[2]
    r1 = s.call("TaskUpdate", {"taskId": one, "owner": "a", "status": "in_progress"})
    r2 = s.call("TaskUpdate", {"taskId": one, "owner": "b", "status": "in_progress"})
    owner = field(files(s), one, "owner")
    return (not r1[0]) and (not r2[0]) and owner == "b", (
        f"owner a in_progress -> {verdict(r1)}, then owner b in_progress -> {verdict(r2)}; owner now {owner!r}")


if __name__ == "__main__":
    run(body)
