"""Claim (timeline "delete arrives", 2.1.19 -> 2.1.20; docs/claude-code.md "`delete` (`status:
"deleted"`) is announced from 2.1.20 on"): TaskUpdate with status "deleted" deletes a task.

Print mode, one CLI on a named list (CLAUDE_CODE_TASK_LIST_ID). TaskCreate, then TaskUpdate
{taskId, status: "deleted"}. Answer yes when the update succeeded and the task's file is gone.
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def main():
    a = C.parse_args("2.1.20")
    C.install(a.version)
    load = C.loadavg()
    root = C.temp_dir("repro-cc-root-")
    s = C.TaskSession(a.version, root, "l")
    try:
        err, text, tid = s.create("one")
        if not tid:
            raise C.CouldNotRun(f"TaskCreate answered {text!r}")
        before = sorted(s.files())
        derr, dtext = s.call("TaskUpdate", {"taskId": tid, "status": "deleted"})
        after = sorted(s.files())
    finally:
        s.close()
    gone = f"{tid}.json" in before and f"{tid}.json" not in after
    said = C.re.sub(r"\s+", " ", dtext)[:110]
    C.finish(a.version, (not derr) and gone, f"TaskUpdate status deleted: {'error' if derr else 'ok'} {said!r}; "
             f"files before {before}, after {after}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.20"))
