"""Claim (docs/claude-code.md, "What happens between requests"; for a restore of a reset list):
completed task files written back into a named list that the terminal UI reset are deleted
again, together with the rest of the list, about 5 s after the agent next creates a task and
completes it (the list was not all completed for a moment, so the UI arms its timer again).
A restore of completed tasks into a list an agent keeps using does not last.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan: create two
tasks, complete both, wait until the UI has deleted the task files (at most 15 s), write both
back as they were (completed; temporary name, then rename), wait 1 s, then the agent creates a
third task and completes it; watch the folder every 50 ms for 10 s after that completion was
written. Answer yes when the two written-back files are gone by then (the observed line says
when, and what else is left).
"""
import os, re, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-restore-new-"), task_list="shared-plan")
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
        for n, text in saved.items():
            (folder / f".{n}.restore").write_text(text)
            os.rename(folder / f".{n}.restore", folder / n)
        time.sleep(1)
        before_new = tasks()
        created = s.turn([("TaskCreate", {"subject": "Gamma", "description": "g", "activeForm": "Doing gamma"})])
        m = re.search(r"#(\d+)", created[0][1])
        if not m:
            raise C.CouldNotRun(f"TaskCreate answered {created[0][1]!r}")
        new_id = m.group(1)
        done = s.turn([("TaskUpdate", {"taskId": new_id, "status": "completed"})])
        done_ns = os.stat(folder / f"{new_id}.json").st_mtime_ns
        gone_at = None
        while time.time_ns() - done_ns < 10e9:
            if gone_at is None and not set(saved) & set(tasks()):
                gone_at = (time.time_ns() - done_ns) / 1e9
            time.sleep(0.05)
        end = tui.folder_state(folder)
    finally:
        s.close()
    hwm = (end.get(".highwatermark") or (0, 0, None))[2]
    C.finish(a.version, gone_at is not None,
             f"written back {sorted(saved)} (completed), still there 1 s later: {before_new}; the agent created "
             f"#{new_id} ({created[0][1]!r}) and completed it ({done[0][1]!r}); written-back files "
             + (f"gone {gone_at:+.2f} s after that completion" if gone_at is not None else "still there 10 s after it")
             + f"; folder then: {sorted(end)}, .highwatermark {hwm!r}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
