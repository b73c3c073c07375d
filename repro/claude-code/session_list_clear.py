"""Claim (docs/claude-code.md, the session's own list; anthropics/claude-code#41667 and #23316,
"/clear empties the task list"): without CLAUDE_CODE_TASK_LIST_ID, /clear starts a new session
id, so the session's own list is no longer the one the agent sees: in the next turn TaskList
answers "No tasks found" and TaskGet "Task not found", while the old list's files
(tasks/<old session id>/1.json, 2.json, .lock) stay on disk, unchanged, 10 s later too. The
tasks are kept and no longer seen; they are not deleted.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID not set: create two
tasks, set the first in_progress, type /clear, look at the folder at once and 10 s after the
command, then one turn calls TaskList, TaskGet 1 and TaskGet 2. Answer yes when both task files
are unchanged (bytes and mtime) throughout, TaskList names neither task, both TaskGet calls
answer not found, and the requests after /clear carry a new session id.
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-clear-"))
    try:
        s.start()
        for calls in ([("TaskCreate", {"subject": "Alpha", "description": "first", "activeForm": "Doing alpha"})],
                      [("TaskCreate", {"subject": "Beta", "description": "second", "activeForm": "Doing beta"})],
                      [("TaskUpdate", {"taskId": "1", "status": "in_progress"})]):
            C.log(calls[0][0], s.turn(calls))
        lists = sorted(os.listdir(s.tasks))
        if len(lists) != 1:
            raise C.CouldNotRun(f"expected one list folder, found {lists}")
        folder = s.tasks / lists[0]
        ids_before = s.session_ids()
        before = tui.folder_state(folder)
        t0 = time.monotonic()
        took = s.slash("/clear")
        right_after = tui.folder_state(folder)
        time.sleep(max(0.0, 10 - (time.monotonic() - t0)))
        later = tui.folder_state(folder)
        look = s.turn([("TaskList", {}), ("TaskGet", {"taskId": "1"}), ("TaskGet", {"taskId": "2"})])
        after_look = tui.folder_state(folder)
        ids = s.session_ids()
        lists_after = sorted(os.listdir(s.tasks))
        transcripts = sorted(s.transcripts())
    finally:
        s.close()
    C.log("look:", look)
    tasks_kept = all(st.get(n) == before.get(n) for st in (right_after, later, after_look)
                     for n in ("1.json", "2.json", ".lock")) and {"1.json", "2.json"} <= set(before)
    tl, g1, g2 = look
    unseen = ("Alpha" not in tl[1] and "Beta" not in tl[1]
              and all("not found" in g[1].lower() for g in (g1, g2)))
    new_id = len(ids) == len(ids_before) + 1 and ids[-1] not in lists
    brief = lambda t: t[1].replace("\n", " | ")[:60] + (" (is_error)" if t[0] else "")  # noqa: E731
    C.finish(a.version, tasks_kept and unseen and new_id,
             f"/clear settled in {took:.1f} s; list {lists[0][:8]}: {sorted(before)} before, {sorted(later)} "
             f"10 s after, files unchanged: {tasks_kept}; next turn: TaskList {brief(tl)!r}, TaskGet 1 "
             f"{brief(g1)!r}, TaskGet 2 {brief(g2)!r}; session ids {[i[:8] for i in ids]}, list folders "
             f"after {[l[:8] for l in lists_after]}, transcripts {[t[:8] for t in transcripts]}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
