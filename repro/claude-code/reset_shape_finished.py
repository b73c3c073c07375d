"""Claim (docs/claude-code.md, "What happens between requests"; anthropics/claude-code#38075 and
#78147): about 5 s after the last task of a named list (CLAUDE_CODE_TASK_LIST_ID) is completed,
the terminal UI resets the list, and what it leaves is exactly `.lock` (empty) and
`.highwatermark` holding the highest task id, written at the reset, with no task file.
2.1.17 differs: it leaves `.lock` only (created at the reset) and no `.highwatermark`, and its
next create takes id 1 again.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan: create two
tasks, complete both (one turn each), then watch the list folder every 50 ms for 8 s after the
second completion was written. Answer yes when the folder then holds exactly `.lock` and
`.highwatermark`, the latter holding "2". The observed line gives when the task files vanished,
each remaining file's size, content and mtime relative to the last completion, the folder's own
mtime, and the id the next TaskCreate gets.
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-reset-"), task_list="shared-plan")
    folder = s.tasks / "shared-plan"
    try:
        s.start()
        for subject in ("Alpha", "Beta"):
            C.log("TaskCreate", s.turn([("TaskCreate", {"subject": subject, "description": subject.lower(),
                                                         "activeForm": "Doing " + subject})]))
        for i in ("1", "2"):
            C.log("complete", i, s.turn([("TaskUpdate", {"taskId": i, "status": "completed"})]))
        done_ns = os.stat(folder / "2.json").st_mtime_ns
        seen, gone_at = set(), None
        while time.time_ns() - done_ns < 8e9:
            names = set(os.listdir(folder))
            seen |= names
            if gone_at is None and not any(n.endswith(".json") for n in names):
                gone_at = (time.time_ns() - done_ns) / 1e9
            time.sleep(0.05)
        end = tui.folder_state(folder)
        dir_mtime = os.stat(folder).st_mtime_ns
        nxt = s.turn([("TaskCreate", {"subject": "Gamma", "description": "g", "activeForm": "g"})])
    finally:
        s.close()
    rel = lambda ns: f"{(ns - done_ns) / 1e9:+.2f} s"  # noqa: E731
    files = "; ".join(f"{n} {size} B {text!r} mtime {rel(m)}" for n, (size, m, text) in sorted(end.items()))
    hwm = (end.get(".highwatermark") or (0, 0, None))[2]
    ok = set(end) == {".lock", ".highwatermark"} and (hwm or "").strip() == "2"
    C.finish(a.version, ok,
             f"task files gone at {gone_at if gone_at is None else f'{gone_at:+.2f} s'} after the last completion "
             f"was written; 8 s after: {files or 'nothing'}; folder mtime {rel(dir_mtime)}; names seen "
             f"{sorted(seen)}; next TaskCreate: {nxt[0][1]!r}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
