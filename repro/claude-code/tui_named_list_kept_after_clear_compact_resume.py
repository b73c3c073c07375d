"""Claim (docs/claude-code.md, "What happens between requests", row "after /clear, /compact,
/exit + --resume (tasks not all completed)": kept; and the paragraph on #41667, #23316, #47533,
#54508: "not reproduced for a named list"): in the terminal UI on a named list
(CLAUDE_CODE_TASK_LIST_ID), with tasks not all completed, `/clear`, `/compact`, and `/exit`
followed by a restart with `--resume` keep every task file, and the next turn's TaskList still
names the tasks with their statuses.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan; three
cases, each a new UI on a new folder, after the steps of taskproof's scenarios
nothing-vanishes-after-clear, -after-compact and -after-exit-and-resume:
  clear:   TaskCreate "Plan the migration", TaskCreate "Run the migration", TaskUpdate 1
           in_progress; /clear;
  compact: the same three steps; /compact;
  resume:  the two creates, TaskUpdate 1 completed; /exit (the CLI must end by itself); the UI
           started again with --resume <the session id of its last request>.
After the command the list folder is watched every 50 ms for 7 s (longer than the 5 s reset
timer), then one turn calls TaskList, TaskGet 1 and TaskGet 2, and one more turn TaskCreate
"Check the migration" (the scenarios expect id 3).

Answer yes when, in all three cases, 1.json and 2.json are present throughout with the same
subject and status, and the TaskList after the command names both tasks with their statuses.
The observed line also says whether the files were byte-for-byte unchanged, whether the
session id changed (/clear starts a new one) while the list folder stayed `shared-plan`, what
TaskGet answered and the id of the next create.
"""
import json, os, re, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def tasks_by_file(folder):
    out = {}
    for n, (_, _, text) in tui.folder_state(folder).items():
        if re.fullmatch(r"\d+\.json", n):
            try:
                t = json.loads(text or "")
                out[n] = (t.get("subject"), t.get("status"))
            except ValueError:
                out[n] = ("?", "?")
    return out


def one_case(version, case):
    s = tui.TaskUi(version, C.temp_dir(f"repro-cc-named-{case}-"), task_list="shared-plan")
    folder = s.tasks / "shared-plan"
    second = "completed" if case == "resume" else "in_progress"
    try:
        s.start()
        for call in (("TaskCreate", {"subject": "Plan the migration", "description": "", "activeForm": "Planning"}),
                     ("TaskCreate", {"subject": "Run the migration", "description": "", "activeForm": "Running"}),
                     ("TaskUpdate", {"taskId": "1", "status": second})):
            C.log(case, call, "->", s.turn([call]))
        want = {"1.json": ("Plan the migration", second), "2.json": ("Run the migration", "pending")}
        before_state = tui.folder_state(folder)
        before = tasks_by_file(folder)
        ids_before = s.session_ids()
        if before != want:
            raise C.CouldNotRun(f"{case}: the list is not as set up: {before}")
        if case == "resume":
            if not s.exit():
                raise C.CouldNotRun("the CLI did not end within 30 s of /exit")
            s.start(["--resume", ids_before[-1]])
            what = f"/exit + --resume {ids_before[-1][:8]}"
        else:
            took = s.slash("/" + case)
            what = f"/{case} (settled in {took:.1f} s)"
        t0 = time.monotonic()
        missing = set()
        while time.monotonic() - t0 < 7:
            now = tasks_by_file(folder)
            missing |= {n for n in want if now.get(n) != want[n]}
            time.sleep(0.05)
        after_state = tui.folder_state(folder)
        tl, g1, g2 = s.turn([("TaskList", {}), ("TaskGet", {"taskId": "1"}), ("TaskGet", {"taskId": "2"})])
        nxt = s.turn([("TaskCreate", {"subject": "Check the migration", "description": "", "activeForm": "Checking"})])[0]
        ids = s.session_ids()
        lists = sorted(os.listdir(s.tasks))
    finally:
        s.close()
    unchanged = all(after_state.get(n) == before_state.get(n) for n in want)
    listed = f"#1 [{second}] Plan the migration" in tl[1] and "#2 [pending] Run the migration" in tl[1]
    gets = (not g1[0] and "Plan the migration" in g1[1] and not g2[0] and "Run the migration" in g2[1])
    m = re.search(r"Task #(\d+) created", nxt[1])
    brief = lambda r: r[1].replace("\n", " | ")[:70] + (" (is_error)" if r[0] else "")  # noqa: E731
    obs = (f"{case}: {what}: task files kept throughout 7 s: {not missing}, byte-for-byte unchanged: {unchanged}; "
           f"next TaskList {brief(tl)!r}; TaskGet 1 and 2 found: {gets}; next create #{m.group(1) if m else '?'}; "
           f"session ids {[i[:8] for i in ids]} (new one after the command: {len(ids) > len(ids_before)}); "
           f"list folders {lists}")
    C.log(obs)
    return (not missing) and listed, obs


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    oks, obs = [], []
    for case in ("clear", "compact", "resume"):
        ok, o = one_case(a.version, case)
        oks.append(ok)
        obs.append(o)
    C.finish(a.version, all(oks),
             f"kept and listed in {sum(oks)} of 3 cases; " + "; ".join(obs) + f"; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
