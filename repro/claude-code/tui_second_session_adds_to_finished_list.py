"""Claim (docs/claude-code.md, "What happens between requests", row "a second session adds a
pending task to a finished list", and the paragraph "A second session does not save the list"):
two terminal-UI sessions on one named list (CLAUDE_CODE_TASK_LIST_ID); session a creates a task
and completes it (the list is finished); session b then adds a pending task: a's completed task
is deleted, b's pending task is kept. taskproof's run had b's create more than 5 s after a's
completion; "whether b's task would stop the reset when it comes within 5 s was not measured".

Two terminal UIs (pseudo-terminals), each with its own config folder and scripted model, whose
`tasks` folders are symbolic links to one shared folder; CLAUDE_CODE_TASK_LIST_ID=shared-plan.
Both UIs are started, then the steps of taskproof's scenario
nothing-vanishes-while-another-session-adds-to-a-finished-list, one turn each: a TaskCreate
"Write the report", a TaskUpdate 1 completed, b TaskCreate "Review the report" (pending); the
list folder is watched every 50 ms until 7 s after b's create; then b calls TaskList. Two
timings, each on new folders and new CLIs:
  late:  b's create is typed 6.5 s after a's completion was written (past the 5 s timer: the
         timing of taskproof's run, the published claim);
  early: b's create is typed as soon as a's turn ended (about 1 s after a's completion: within
         the 5 s), measured too (not published).
--runs N (default 2) repeats both.

Tasks are told apart by subject, not by file name (2.1.17 leaves no .highwatermark, so a create
after its reset may take id 1 again). Answer yes when, in every late run, every call answered
success, no file holds "Write the report" at the end and a file holds "Review the report"
pending. The observed line gives, per case, the id b's task got, when each file vanished
(seconds after a's completion was written) and which subjects the folder holds at the end.
"""
import json, os, re, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui

SUCCESS = re.compile(r"Task #\d+ created successfully|Updated task #\d+")


def tasks_by_file(folder):
    out = {}
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return out
    for n in names:
        if re.fullmatch(r"\d+\.json", n):
            try:
                t = json.loads((folder / n).read_text())
                out[n] = (t.get("subject"), t.get("status"))
            except (OSError, ValueError):
                out[n] = ("?", "?")
    return out


def one_case(version, k, case):
    shared = C.temp_dir(f"repro-cc-shared-{case}-{k}-")
    A = tui.TaskUi(version, C.temp_dir(f"repro-cc-a-{case}-{k}-"), task_list="shared-plan")
    B = tui.TaskUi(version, C.temp_dir(f"repro-cc-b-{case}-{k}-"), task_list="shared-plan")
    for s in (A, B):
        s.tasks.symlink_to(shared)
    folder = shared / "shared-plan"
    seen = {}       # (file, subject) -> last time seen (s after a's completion)
    gone = {}       # (file, subject) -> first time missing
    t_done = [None]

    def look(until):
        while True:
            now = (time.time_ns() - t_done[0]) / 1e9
            have = tasks_by_file(folder)
            for key in list(seen):
                if key[0] not in have or have[key[0]][0] != key[1]:
                    gone.setdefault(key, now)
            for n, (subj, _) in have.items():
                seen[(n, subj)] = now
                gone.pop((n, subj), None)
            if now >= until:
                return have
            time.sleep(0.05)

    try:
        A.start()
        B.start()
        r1 = A.turn([("TaskCreate", {"subject": "Write the report", "description": "", "activeForm": "Writing"})])[0]
        r2 = A.turn([("TaskUpdate", {"taskId": "1", "status": "completed"})])[0]
        t_done[0] = os.stat(folder / "1.json").st_mtime_ns
        if case == "late":
            look(6.5)
        b_typed = (time.time_ns() - t_done[0]) / 1e9
        r3 = B.turn([("TaskCreate", {"subject": "Review the report", "description": "", "activeForm": "Reviewing"})])[0]
        m = re.search(r"Task #(\d+) created", r3[1])
        b_id = m.group(1) if m else None
        try:
            b_written = (os.stat(folder / f"{b_id}.json").st_mtime_ns - t_done[0]) / 1e9
        except (OSError, TypeError):
            b_written = None
        end = look((b_written or b_typed) + 7)
        listing = B.turn([("TaskList", {})])[0]
        names = sorted(tui.folder_state(folder))
    finally:
        A.close()
        B.close()
    results = [r1, r2, r3]
    C.log(f"{case} run {k}:", results)
    all_ok = all(not err and SUCCESS.search(text) for err, text in results)
    subjects = {subj: st for subj, st in end.values()}
    finished_deleted = "Write the report" not in subjects
    pending_kept = subjects.get("Review the report") == "pending"
    vanished = ", ".join(f"{n} ({s!r}) +{t:.2f} s" for (n, s), t in sorted(gone.items(), key=lambda x: x[1])) \
        or "none"
    bw = f"+{b_written:.2f} s" if b_written is not None else "?"
    obs = (f"{case} run {k}: b's create typed +{b_typed:.2f} s, written {bw} after a's completion, "
           f"got #{b_id}; calls success: {all_ok}; vanished: {vanished}; 7 s after b's create: "
           f"{ {n: f'{s} [{st}]' for n, (s, st) in sorted(end.items())} }, folder {names}; "
           f"b's TaskList {listing[1].replace(chr(10), ' | ')[:60]!r}")
    C.log(obs)
    return all_ok, finished_deleted, pending_kept, obs


def main():
    a = C.parse_args("2.1.332", runs=2)
    C.install(a.version)
    load = C.loadavg()
    late_ok, obs, early = [], [], []
    for k in range(1, a.runs + 1):
        for case in ("late", "early"):
            ok, fd, pk, o = one_case(a.version, k, case)
            obs.append(o)
            if case == "late":
                late_ok.append(ok and fd and pk)
            else:
                early.append((fd, pk))
    early_txt = (f"finished task kept in {sum(not fd for fd, _ in early)} of {len(early)} runs, "
                 f"pending task kept in {sum(pk for _, pk in early)} of {len(early)}")
    C.finish(a.version, all(late_ok),
             f"b's pending task added after the 5 s: finished task deleted and pending task kept in {sum(late_ok)} "
             f"of {len(late_ok)} runs; added within the 5 s (not published): {early_txt}; "
             + "; ".join(obs) + f"; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
