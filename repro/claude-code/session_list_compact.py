"""Claim (docs/claude-code.md, the session's own list; anthropics/claude-code#47533 and #54508,
"compaction loses the task list" / "a new session id after /compact"): without
CLAUDE_CODE_TASK_LIST_ID, /compact keeps the session id, so the agent still sees its own
list: in the next turn TaskList names both tasks with their statuses and TaskGet finds each,
and the files stay unchanged on disk.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID not set: create two
tasks, set the first in_progress, type /compact (the scripted model answers the summary
request, which 2.1.17 sends with the tool Read only and later versions with the agent's own
tools, with an <analysis> and a <summary> block), look at the folder at once and 10 s after the
command, then one turn calls TaskList, TaskGet 1 and TaskGet 2. Answer yes when the summary
was asked for, TaskList shows "#1 [in_progress] Alpha" and "#2 [pending] Beta", both TaskGet
calls find their task, the task files are unchanged (bytes and mtime), and every request
carries the one session id that names the list folder. The observed line also says whether
the UI drew the task subjects again after the command (#54508 is about the task panel).
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-compact-"))
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
        before = tui.folder_state(folder)
        t0 = time.monotonic()
        mark = s.ui.mark()
        took = s.slash("/compact")
        drawn = "".join(s.ui.since(mark).split())
        panel = "Alpha" in drawn and "Beta" in drawn
        right_after = tui.folder_state(folder)
        time.sleep(max(0.0, 10 - (time.monotonic() - t0)))
        later = tui.folder_state(folder)
        look = s.turn([("TaskList", {}), ("TaskGet", {"taskId": "1"}), ("TaskGet", {"taskId": "2"})])
        after_look = tui.folder_state(folder)
        ids = s.session_ids()
        asked = s.compactions
    finally:
        s.close()
    C.log("look:", look)
    kept = all(st.get(n) == before.get(n) for st in (right_after, later, after_look)
               for n in ("1.json", "2.json")) and {"1.json", "2.json"} <= set(before)
    tl, g1, g2 = look
    seen = ("#1 [in_progress] Alpha" in tl[1] and "#2 [pending] Beta" in tl[1]
            and "Alpha" in g1[1] and "in_progress" in g1[1] and "Beta" in g2[1] and "pending" in g2[1])
    same_id = ids == lists
    brief = lambda t: t[1].replace("\n", " | ")[:60] + (" (is_error)" if t[0] else "")  # noqa: E731
    C.finish(a.version, asked >= 1 and seen and kept and same_id,
             f"/compact settled in {took:.1f} s, summary asked {asked}x; both task subjects drawn again "
             f"after it: {panel}; files unchanged: {kept} ({sorted(later)}); next turn: TaskList {brief(tl)!r}, "
             f"TaskGet 1 {brief(g1)!r}, TaskGet 2 {brief(g2)!r}; session ids {[i[:8] for i in ids]}, "
             f"list {lists[0][:8]}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
