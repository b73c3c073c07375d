"""Claim (docs/claude-code.md, "What happens between requests"; for a restore of a reset list):
while the terminal UI that reset a finished named list keeps running, completed task files that
another process writes back into the list are kept (not deleted again) from 2.1.112 on: after a
reset the UI's task store marks the list hidden and arms its 5 s timer again only once it has
seen a task that is not completed. 2.1.17 has no such latch: it finds the files again at its
next poll (every 5 s) and deletes them 5 s later.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan: create two
tasks, complete both, wait until the UI has deleted the task files (at most 15 s), wait 1 s,
then write both files back as they were (completed; each written to a temporary name in the
folder and renamed), and watch the folder every 50 ms for 15 s. Answer yes when both files are
still there after 15 s. The observed line says when they vanished otherwise.
"""
import json, os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui

STATUS = "completed"


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-restore-"), task_list="shared-plan")
    folder = s.tasks / "shared-plan"
    tasks = lambda: sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))  # noqa: E731
    try:
        s.start()
        for subject in ("Alpha", "Beta"):
            s.turn([("TaskCreate", {"subject": subject, "description": subject.lower(), "activeForm": "Doing " + subject})])
        for i in ("1", "2"):
            s.turn([("TaskUpdate", {"taskId": i, "status": "completed"})])
        saved = {n: json.loads((folder / n).read_text()) for n in tasks()}
        t0 = time.monotonic()
        while tasks() and time.monotonic() - t0 < 15:
            time.sleep(0.05)
        if tasks():
            raise C.CouldNotRun(f"the UI did not reset the finished list within 15 s: {tasks()}")
        reset_after = time.monotonic() - t0
        time.sleep(1)
        for n, task in saved.items():
            task["status"] = STATUS
            tmp = folder / f".{n}.restore"
            tmp.write_text(json.dumps(task, indent=2))
            os.rename(tmp, folder / n)
        restored = time.monotonic()
        gone_at = None
        while time.monotonic() - restored < 15:
            if gone_at is None and len(tasks()) < len(saved):
                gone_at = time.monotonic() - restored
            time.sleep(0.05)
        left = tasks()
        end = tui.folder_state(folder)
    finally:
        s.close()
    kept = left == sorted(saved)
    C.finish(a.version, kept,
             f"reset {reset_after:.2f} s after the completion turn ended; {sorted(saved)} written back as {STATUS}: "
             + ("both still there 15 s later" if kept else f"gone {gone_at:.2f} s after they were written back")
             + f"; folder then: {sorted(end)}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
