"""Claim (docs/claude-code.md, "What happens between requests", row "finished list left idle
7 s"; anthropics/claude-code#38075 and #78147): in the terminal UI, a named list
(CLAUDE_CODE_TASK_LIST_ID) whose tasks are all completed, left idle about 7 s, loses every task
file, about 5 s after the last completion, while every tool call answered success.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan, the steps
of taskproof's scenario nothing-vanishes-finished-list-left-idle, one turn each: TaskCreate
"Write the report", TaskCreate "Send the report", TaskUpdate 1 in_progress, 1 completed,
2 in_progress, 2 completed; then the list folder is watched every 50 ms for 7 s from the moment
the last completion was written (the mtime of 2.json); then one turn calls TaskList and
TaskGet 2. Each run is a new terminal UI on a new folder (--runs, default 3).

Answer yes when, in every run, every tool call of the six steps answered success (not is_error,
and the tool's success text), and no task file (N.json) is left 7 s after the last completion.
The observed line gives, per run, when the task files vanished (seconds after the last
completion was written), what the folder then holds, and the next TaskList/TaskGet answers.
"""
import os, re, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui

SUCCESS = re.compile(r"Task #\d+ created successfully|Updated task #\d+")


def one_run(version, k):
    s = tui.TaskUi(version, C.temp_dir(f"repro-cc-idle-{k}-"), task_list="shared-plan")
    folder = s.tasks / "shared-plan"
    steps = [("TaskCreate", {"subject": "Write the report", "description": "", "activeForm": "Writing the report"}),
             ("TaskCreate", {"subject": "Send the report", "description": "", "activeForm": "Sending the report"}),
             ("TaskUpdate", {"taskId": "1", "status": "in_progress"}),
             ("TaskUpdate", {"taskId": "1", "status": "completed"}),
             ("TaskUpdate", {"taskId": "2", "status": "in_progress"}),
             ("TaskUpdate", {"taskId": "2", "status": "completed"})]
    try:
        s.start()
        results = []
        for call in steps:
            r = s.turn([call])[0]
            C.log(f"run {k}", call, "->", r)
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
        look = s.turn([("TaskList", {}), ("TaskGet", {"taskId": "2"})])
    finally:
        s.close()
    deleted = bool(before) and not left
    when = ", ".join(f"{n} +{t:.2f} s" for n, t in sorted(gone.items())) or "none gone"
    brief = lambda r: r[1].replace("\n", " | ")[:40] + (" (is_error)" if r[0] else "")  # noqa: E731
    obs = (f"run {k}: six calls answered success: {all_ok}; files {before} before; gone: {when}; 7 s after: "
           f"{end}; next TaskList {brief(look[0])!r}, TaskGet 2 {brief(look[1])!r}")
    C.log(obs)
    return all_ok and deleted, obs, [t for t in gone.values()]


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
             f"deleted while every call answered success in {sum(oks)} of {len(oks)} runs, task files gone "
             f"{span} after the last completion; " + "; ".join(obs) + f"; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
