"""Claim (docs/claude-code.md, "Agent teams"; issue 54): with agent teams on
(CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1 in the environment, CLAUDE_CODE_TASK_LIST_ID not set),
a session ended with /exit and started again with `claude --resume <session id>` sees its
own list: the next turn's TaskList names both tasks with their statuses, and the task files
are unchanged. With teams on the terminal UI keeps the session's own list in a team folder
`session-<first 8 hex>` (not `<session id>`), which is why the restart names the session id
(read from the CLI's requests) rather than the folder.

Terminal UI (a pseudo-terminal), scripted model: create two tasks, set the first
in_progress, type /exit (the CLI must end by itself), start the UI again with
--resume <session id>, one turn calls TaskList, TaskGet 1 and TaskGet 2. Answer yes when the
restart lists "#1 [in_progress] Alpha" and "#2 [pending] Beta", both TaskGet calls find their
task and the task files are unchanged (bytes and mtime). The observation names every list
folder before and after, so a restart that works in a new, empty folder is seen as such.
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-teams-resume-"))
    s.env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] = "1"
    try:
        s.start()
        for calls in ([("TaskCreate", {"subject": "Alpha", "description": "first", "activeForm": "Doing alpha"})],
                      [("TaskCreate", {"subject": "Beta", "description": "second", "activeForm": "Doing beta"})],
                      [("TaskUpdate", {"taskId": "1", "status": "in_progress"})]):
            C.log(calls[0][0], s.turn(calls))
        lists = sorted(p for p in os.listdir(s.tasks) if (s.tasks / p / "1.json").is_file())
        if len(lists) != 1:
            raise C.CouldNotRun(f"expected one list folder holding 1.json, found {sorted(os.listdir(s.tasks))}")
        folder = s.tasks / lists[0]
        ids = s.session_ids()
        if len(ids) != 1:
            raise C.CouldNotRun(f"expected one session id before /exit, saw {ids}")
        sid = ids[0]
        before = tui.folder_state(folder)
        if not s.exit():
            raise C.CouldNotRun("the CLI did not end within 30 s of /exit")
        s.start(["--resume", sid])
        tl, g1, g2 = s.turn([("TaskList", {}), ("TaskGet", {"taskId": "1"}), ("TaskGet", {"taskId": "2"})])
        after = tui.folder_state(folder)
        folders = sorted(os.listdir(s.tasks))
        ids_after = s.session_ids()
    finally:
        s.close()
    seen = ("#1 [in_progress] Alpha" in tl[1] and "#2 [pending] Beta" in tl[1]
            and "in_progress" in g1[1] and "pending" in g2[1])
    kept = all(after.get(n) == before.get(n) for n in ("1.json", "2.json")) and {"1.json", "2.json"} <= set(before)
    C.finish(a.version, seen and kept,
             f"tasks written in {lists[0]} (session {sid[:8]}); --resume {sid[:8]}: TaskList "
             f"{tl[1].replace(chr(10), ' | ')[:60]!r}, TaskGet 2 {g2[1].replace(chr(10), ' | ')[:40]!r}; "
             f"files unchanged: {kept}; list folders after: {folders}; session ids {[i[:8] for i in ids_after]}; "
             f"load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
