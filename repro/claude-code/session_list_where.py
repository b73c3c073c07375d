"""Claim (docs/claude-code.md, the session's own list): without CLAUDE_CODE_TASK_LIST_ID the
terminal UI keeps a session's tasks in tasks/<session id>/, and that id can be read from
outside the CLI: it names the session's transcript, projects/<working folder with every
character outside [A-Za-z0-9] as ->/<session id>.jsonl, whose lines carry it as "sessionId",
and the requests to the model carry it in metadata.user_id.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID not set, no
--session-id: one turn creates a task. Answer yes when the tasks folder holds exactly one list,
named by the one session id of the requests, and a transcript of that name exists whose lines
name the same id.
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-where-"))
    try:
        s.start()
        r = s.turn([("TaskCreate", {"subject": "Alpha", "description": "first", "activeForm": "Doing alpha"})])
        C.log("TaskCreate:", r)
        lists = sorted(os.listdir(s.tasks)) if s.tasks.is_dir() else []
        files = {l: sorted(os.listdir(s.tasks / l)) for l in lists}
        ids = s.session_ids()
        transcripts = s.transcripts()
        project = sorted(p.name for p in (s.config / "projects").glob("*"))
    finally:
        s.close()
    C.log("lists", files, "session ids", ids, "transcripts", transcripts, "projects", project)
    ok = (len(lists) == 1 and ids == lists and lists[0] in transcripts
          and transcripts[lists[0]] == lists)
    C.finish(a.version, ok, f"list folders {files}; session id in the requests {ids}; transcripts "
             f"{ {k: v for k, v in transcripts.items()} } under projects/{project}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
