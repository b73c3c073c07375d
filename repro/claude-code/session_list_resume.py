"""Claim (docs/claude-code.md, the session's own list): without CLAUDE_CODE_TASK_LIST_ID, a
session ended with /exit and started again with `claude --resume ID` (ID = the name of its
list folder), or with `claude --continue`, keeps its session id and so its own list: in the
next turn TaskList names both tasks with their statuses, and the files are unchanged.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID not set: create two
tasks, set the first in_progress, type /exit (the CLI must end by itself), start the UI again
with --resume <list folder name>, look at the folder 10 s after /exit, one turn calls
TaskList, TaskGet 1 and TaskGet 2; then /exit again, start it with --continue, and the same
turn once more. Answer yes when both restarts list "#1 [in_progress] Alpha" and
"#2 [pending] Beta", both TaskGet calls find their task, the task files are unchanged (bytes
and mtime) and every request carries the one session id.
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def look(s):
    tl, g1, g2 = s.turn([("TaskList", {}), ("TaskGet", {"taskId": "1"}), ("TaskGet", {"taskId": "2"})])
    ok = ("#1 [in_progress] Alpha" in tl[1] and "#2 [pending] Beta" in tl[1]
          and "in_progress" in g1[1] and "pending" in g2[1])
    return ok, tl[1].replace("\n", " | ")[:60]


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-resume-"))
    try:
        s.start()
        for calls in ([("TaskCreate", {"subject": "Alpha", "description": "first", "activeForm": "Doing alpha"})],
                      [("TaskCreate", {"subject": "Beta", "description": "second", "activeForm": "Doing beta"})],
                      [("TaskUpdate", {"taskId": "1", "status": "in_progress"})]):
            C.log(calls[0][0], s.turn(calls))
        lists = sorted(os.listdir(s.tasks))
        if len(lists) != 1:
            raise C.CouldNotRun(f"expected one list folder, found {lists}")
        sid, folder = lists[0], s.tasks / lists[0]
        before = tui.folder_state(folder)
        t0 = time.monotonic()
        if not s.exit():
            raise C.CouldNotRun("the CLI did not end within 30 s of /exit")
        exited = tui.folder_state(folder)
        s.start(["--resume", sid])
        time.sleep(max(0.0, 10 - (time.monotonic() - t0)))
        later = tui.folder_state(folder)
        ok1, tl1 = look(s)
        if not s.exit():
            raise C.CouldNotRun("the resumed CLI did not end within 30 s of /exit")
        s.start(["--continue"])
        ok2, tl2 = look(s)
        end = tui.folder_state(folder)
        ids = s.session_ids()
        lists_after = sorted(os.listdir(s.tasks))
    finally:
        s.close()
    kept = all(st.get(n) == before.get(n) for st in (exited, later, end) for n in ("1.json", "2.json")) \
        and {"1.json", "2.json"} <= set(before)
    C.finish(a.version, ok1 and ok2 and kept and ids == [sid],
             f"--resume {sid[:8]}: TaskList {tl1!r}; --continue: TaskList {tl2!r}; files unchanged: {kept} "
             f"({sorted(later)} 10 s after /exit); session ids {[i[:8] for i in ids]}, list folders "
             f"{[l[:8] for l in lists_after]}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
