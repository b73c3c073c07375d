"""Claim (docs/claude-code.md, "What happens between requests"; for a restore of a reset list):
a terminal UI started on a named list whose tasks are all completed deletes them about 5 s after
it starts, also when they were written back after an earlier reset: each new session's task
store starts unlatched. So completed tasks restored while no session runs are lost again as soon
as a session opens the list.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan: a first UI
creates two tasks and completes both, and its reset deletes them (at most 15 s); it is ended
with /exit; both files are written back as they were (completed; temporary name, then rename);
then a second UI is started on the list and the folder is watched every 50 ms for 12 s after
its input box shows. Answer yes when the written-back files are gone by then (the observed line
says when, relative to the new UI's input box).
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-restore-session-"), task_list="shared-plan")
    folder = s.tasks / "shared-plan"
    tasks = lambda: sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))  # noqa: E731
    try:
        s.start()
        for subject in ("Alpha", "Beta"):
            s.turn([("TaskCreate", {"subject": subject, "description": subject.lower(), "activeForm": "Doing " + subject})])
        for i in ("1", "2"):
            s.turn([("TaskUpdate", {"taskId": i, "status": "completed"})])
        saved = {n: (folder / n).read_text() for n in tasks()}
        t0 = time.monotonic()
        while tasks() and time.monotonic() - t0 < 15:
            time.sleep(0.05)
        if tasks():
            raise C.CouldNotRun(f"the UI did not reset the finished list within 15 s: {tasks()}")
        if not s.exit():
            raise C.CouldNotRun("the first UI did not end within 30 s of /exit")
        for n, text in saved.items():
            (folder / f".{n}.restore").write_text(text)
            os.rename(folder / f".{n}.restore", folder / n)
        restored = time.monotonic()
        s.start()
        ready = time.monotonic()
        gone_at = None
        while time.monotonic() - ready < 12:
            if gone_at is None and not set(saved) & set(tasks()):
                gone_at = time.monotonic() - ready
            time.sleep(0.05)
        end = tui.folder_state(folder)
    finally:
        s.close()
    C.finish(a.version, gone_at is not None,
             f"written back {sorted(saved)} (completed) with no UI running; a new UI showed its input box "
             f"{ready - restored:.2f} s later; the files "
             + (f"gone {gone_at:.2f} s after that" if gone_at is not None else "still there 12 s after it")
             + f"; folder then: {sorted(end)}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
