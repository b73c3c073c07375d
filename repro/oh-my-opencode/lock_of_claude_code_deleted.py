"""Claim omo-deletes-claude-code-lock: after Claude Code 2.1.332 created tasks in a list (and
left its empty `.lock` there), one task_create of oh-my-opencode with `storage_path` at that
list leaves no `.lock` in the folder: the plugin took Claude Code's empty lock file for a stale
lock of its own (it does not parse as JSON), deleted it, and removed its own when done.
Asks: is the `.lock` gone after the plugin's one task_create? Exit 0 with a JSON verdict."""
import _beside as B


def calls(ids):
    return [("task_create", {"subject": "plugin task"})]


def judge(folder, ids, results, before, after):
    ok = [not e and '"task"' in t for e, t in results]
    return (before[".lock"] == "empty" and after[".lock"] == "missing" and all(ok),
            f".lock before {before['.lock']}, after {after['.lock']}; task_create answered {results[0][1][:120]!r}")


B.run((calls, judge))
