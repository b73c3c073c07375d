"""Shared by restore_after_reset_completed.py and restore_after_reset_pending.py, which ask
the same question of task files written back in two statuses: the terminal UI resets a
finished named list, then another process writes the two task files back (each to a
temporary name in the folder, then renamed), and the folder is watched every 50 ms for 15 s.
"""
import json, os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main(status):
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
            task["status"] = status
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
             f"reset {reset_after:.2f} s after the completion turn ended; {sorted(saved)} written back as {status}: "
             + ("both still there 15 s later" if kept else f"gone {gone_at:.2f} s after they were written back")
             + f"; folder then: {sorted(end)}; load {load}")
