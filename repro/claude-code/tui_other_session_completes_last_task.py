"""Claim (docs/claude-code.md, "What happens between requests", row "another session completes
the last task"; anthropics/claude-code#78147): two terminal-UI sessions (two CLIs) on one named
list (CLAUDE_CODE_TASK_LIST_ID, one tasks folder); session a creates two tasks and completes the
first, session b completes the second (the last one): within 7 s both task files are deleted,
session a's own completed task too, while every tool call answered success.

Two terminal UIs (pseudo-terminals), each with its own config folder and scripted model, whose
`tasks` folders are symbolic links to one shared folder; CLAUDE_CODE_TASK_LIST_ID=shared-plan.
Both UIs are started, then the steps of taskproof's scenario
nothing-vanishes-when-another-session-completes-the-last-task, one turn each: a TaskCreate
"Write the report", a TaskCreate "Send the report", a TaskUpdate 1 completed, b TaskUpdate 2
completed; the list folder is watched every 50 ms for 7 s from the moment b's completion was
written (the mtime of 2.json); then a calls TaskList. Each run uses new folders and new CLIs
(--runs, default 3).

Answer yes when, in every run, every call answered success and neither 1.json nor 2.json is
left 7 s after b's completion. The observed line gives when each file vanished (seconds after
b's completion was written) and what the folder then holds.
"""
import os, re, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui

SUCCESS = re.compile(r"Task #\d+ created successfully|Updated task #\d+")


def one_run(version, k):
    shared = C.temp_dir(f"repro-cc-shared-{k}-")
    A = tui.TaskUi(version, C.temp_dir(f"repro-cc-a-{k}-"), task_list="shared-plan")
    B = tui.TaskUi(version, C.temp_dir(f"repro-cc-b-{k}-"), task_list="shared-plan")
    for s in (A, B):
        s.tasks.symlink_to(shared)
    folder = shared / "shared-plan"
    try:
        A.start()
        B.start()
        results = []
        for s, call in ((A, ("TaskCreate", {"subject": "Write the report", "description": "", "activeForm": "Writing"})),
                        (A, ("TaskCreate", {"subject": "Send the report", "description": "", "activeForm": "Sending"})),
                        (A, ("TaskUpdate", {"taskId": "1", "status": "completed"})),
                        (B, ("TaskUpdate", {"taskId": "2", "status": "completed"}))):
            r = s.turn([call])[0]
            C.log(f"run {k}", "a" if s is A else "b", call, "->", r)
            results.append(r)
        all_ok = all(not err and SUCCESS.search(text) for err, text in results)
        before = tui.task_files(folder)
        done_ns = os.stat(folder / "2.json").st_mtime_ns
        gone = {}
        while time.time_ns() - done_ns < 7e9:
            have = set(tui.task_files(folder))
            for n in before:
                if n not in have and n not in gone:
                    gone[n] = (time.time_ns() - done_ns) / 1e9
            time.sleep(0.05)
        left = tui.task_files(folder)
        end = sorted(tui.folder_state(folder))
        look = A.turn([("TaskList", {})])[0]
    finally:
        A.close()
        B.close()
    deleted = before == ["1.json", "2.json"] and not left
    when = ", ".join(f"{n} +{t:.2f} s" for n, t in sorted(gone.items())) or "none gone"
    obs = (f"run {k}: four calls answered success: {all_ok}; files {before} after b's completion; gone: {when}; "
           f"7 s after: {end}; a's next TaskList {look[1].replace(chr(10), ' | ')[:40]!r}")
    C.log(obs)
    return all_ok and deleted, obs, list(gone.values())


def main():
    a = C.parse_args("2.1.332", runs=3)
    C.install(a.version)
    load = C.loadavg()
    oks, obs, times = [], [], []
    for k in range(1, a.runs + 1):
        ok, o, t = one_run(a.version, k)
        oks.append(ok)
        obs.append(o)
        times += t
    span = f"{min(times):.2f}-{max(times):.2f} s" if times else "never"
    C.finish(a.version, all(oks),
             f"both task files (a's completed task too) deleted in {sum(oks)} of {len(oks)} runs, gone {span} "
             f"after b completed the last task; " + "; ".join(obs) + f"; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
