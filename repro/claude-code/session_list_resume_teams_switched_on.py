"""Claim (docs/claude-code.md, "Configurations and agent teams"; issue 54): a session started
with agent teams off and CLAUDE_CODE_TASK_LIST_ID not set keeps its list in
tasks/<session id>/; when it is ended with /exit and resumed by its id with agent teams
switched on (CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1), the resumed session's TaskList still
shows its task.

Terminal UI (a pseudo-terminal), scripted model: with teams off create one task, /exit (the CLI
must end by itself), start the UI again with --resume <session id> and the variable set, one
turn calls TaskList. Answer yes when TaskList names "#1 [pending] Alpha" and the task file is
unchanged. The observation names the list folders before and after, so a session that works
in a new, empty team folder is seen as such, and whether the old folder was renamed.
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-teams-switched-on-"))
    try:
        s.start()
        C.log("TaskCreate", s.turn([("TaskCreate", {"subject": "Alpha", "description": "first", "activeForm": "Doing alpha"})]))
        ids = s.session_ids()
        before_folders = sorted(os.listdir(s.tasks))
        if len(ids) != 1 or before_folders != [ids[0]]:
            raise C.CouldNotRun(f"expected one list folder named after the one session id, found {before_folders} for ids {ids}")
        sid = ids[0]
        folder = s.tasks / sid
        before = tui.folder_state(folder)
        if not s.exit():
            raise C.CouldNotRun("the CLI did not end within 30 s of /exit")
        s.env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] = "1"
        s.start(["--resume", sid])
        (tl,) = s.turn([("TaskList", {})])
        after = tui.folder_state(folder) if folder.is_dir() else {}
        folders = {d: sorted(os.listdir(s.tasks / d)) for d in sorted(os.listdir(s.tasks))}
    finally:
        s.close()
    seen = "#1 [pending] Alpha" in tl[1]
    kept = after.get("1.json") is not None and after.get("1.json") == before.get("1.json")
    C.finish(a.version, seen and kept,
             f"teams off: list {sid[:8]}; resumed with teams on: TaskList {tl[1].replace(chr(10), ' | ')[:50]!r}; "
             f"file unchanged in {sid[:8]}: {kept}; folders after: "
             f"{ {k[:16]: v for k, v in folders.items()} }; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
