"""Claim cc-tasks-id-forms-not-refused: TaskGet takes any text as a task id: an id that is not a
decimal number (01, +1, 1.0) is answered as a task not found, not refused as malformed, though
task 1 exists (found by taskproof fuzz, reports/fuzz-recall.md).

Print mode, one named list. Task 1; TaskGet {taskId: "01"}, {taskId: "+1"}, {taskId: "1.0"}.
Answer yes when none of them returns task 1 and none is refused for its form (each answers
that no such task was found). Strict contract: S13 expects `invalid` for an id that is not
canonical decimal.
"""
from _tasks import run


def body(s):
    s.create("one")
    seen, ok = [], True
    for tid in ("01", "+1", "1.0"):
        err, text = s.call("TaskGet", {"taskId": tid})
        not_found = "not found" in text.lower()
        ok &= not_found and "one" not in text
        seen.append(f"{tid!r} -> {'error' if err else 'ok'} {text[:50]!r}")
    return ok, "; ".join(seen)


if __name__ == "__main__":
    run(body)
