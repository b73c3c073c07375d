#!/usr/bin/env python3
"""Writes reports/mcp/NAME/README.md for the five MCP servers: the run's counts, the race's,
and the review of every FAIL and ERROR of run.json, each with its reproduction (a script under
reports/mcp/NAME/repro/ and its claim in repro/claims.toml) and the answer that
script gave when last recorded. Refuses (exit 1) when a FAIL or ERROR has no review here, or a
reviewed scenario no longer fails: a review is written for the run it describes.

    python3 reports/mcp/review.py [NAME...]
"""
import glob
import json
import os
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SERVERS = {
    "dex": ("@zeeg/dex", "0.16.0", "dex.toml"),
    "mcp-taskmanager": ("@kazuph/mcp-taskmanager", "1.1.1", "mcp-taskmanager.toml"),
    "ohno-mcp": ("@stevestomp/ohno-mcp", "0.20.0", "ohno-mcp.toml"),
    "task-orchestrator": ("@allpepper/task-orchestrator", "3.3.3", "task-orchestrator.toml"),
    "mcp-shrimp-task-manager": ("mcp-shrimp-task-manager", "1.0.21", "mcp-shrimp-task-manager.toml"),
}

# scenario -> (how it was reviewed: whose, and why; [reproduction scripts])
REVIEW = {
    "dex": {
        "concurrent-creates-get-unique-ids": (
            "Four sessions, each its own `dex mcp` on one storage folder, create 25 tasks each; "
            "creates the server acknowledged are missing from the final listing, and some "
            "creates answer dex's own `Failed to write tasks`. The request and the answers are "
            "dex's (one create_task each); the id table only numbers what dex answered. The "
            "server's: it rewrites tasks.jsonl without a lock.",
            ["dex_concurrent_creates_lost.py"]),
        "blockers-must-be-completed-first": (
            "`update {status: in_progress}` of a task whose blockers are pending is one "
            "update_task {completed: false, started_at} call; dex answers the task started. The "
            "server's: it does not check blockers when a task is started or completed.",
            ["dex_blocked_task_starts.py"]),
        "completed-is-final": (
            "A completed task given `status: in_progress` (one update_task {completed: false, "
            "started_at}) is started again. The server's: nothing in dex makes completed final.",
            ["dex_completed_task_restarts.py", "dex_completed_task_reopens.py"]),
        "rt02-status-updates": (
            "A completed task given `status: pending` (update_task {completed: false, "
            "started_at: null}) is reopened. The server's.",
            ["dex_completed_task_reopens.py"]),
    },
    "mcp-taskmanager": {
        "ids-never-reused-after-delete-and-restart": (
            "After the newest tasks are deleted, the next add_tasks_to_request is given `task-3` "
            "again; the id table maps the server id it saw before to its old wire id, so the "
            "scenario sees id 3 handed out again. The server's: ids are the highest remaining "
            "number + 1.",
            ["kazuph_id_reused_after_delete.py"]),
        "concurrent-creates-get-unique-ids": (
            "Four server processes on one tasks.json adding at once: the request (the list's "
            "container) itself is lost (`Request not found`) and with it the tasks, and two adds "
            "are given one id. The server's: it rewrites tasks.json with no lock.",
            ["kazuph_concurrent_adds_lost.py", "kazuph_concurrent_adds_same_id.py"]),
    },
    "ohno-mcp": {
        "completed-is-final": (
            "A done task given `status: in_progress` (update_task_status) is started again. The "
            "server's: any status to any.",
            ["ohno_done_task_restarts.py", "ohno_done_task_reopens.py"]),
        "rt02-status-updates": ("A done task set back to todo (update_task_status). The server's.", ["ohno_done_task_reopens.py"]),
        "rt04-circular-dependency": (
            "add_dependency of the second edge of a two-task cycle answers success. The server's.",
            ["ohno_cycle_accepted.py"]),
        "concurrent-edge-additions-leave-no-cycle": (
            "When it fails (not in every run: the two processes' writes also erase each other): "
            "two processes adding opposite edges leave a cycle; ohno accepts one even from one "
            "process (rt04), and a second process neither sees nor keeps the first's writes. "
            "The server's.",
            ["ohno_cycle_accepted.py", "ohno_second_process_loses_tasks.py"], True),
        "concurrent-creates-get-unique-ids": (
            "Four processes on one database (each list's server is one per session): each loads "
            "the database once and writes its own copy back, erasing the others' tasks. The "
            "server's.",
            ["ohno_second_process_loses_tasks.py"]),
        "two-processes-creating-get-different-ids": ("As concurrent-creates: the second process's write erases the first's tasks.", ["ohno_second_process_loses_tasks.py"]),
        "nothing-vanishes-when-another-session-completes-the-last-task": (
            "Session b completes a task; session a's process, which loaded the database before, "
            "lists it still pending. The server's (a process never re-reads the database).",
            ["ohno_second_process_loses_tasks.py"]),
    },
    "task-orchestrator": {
        "blockers-must-be-completed-first": (
            "A completed task given a completed blocker (addBlockedBy) is refused: "
            "`Cannot use blocker …: entity is in terminal state CLOSED`. The server's: a CLOSED "
            "task can never be a blocker (S5 forbids only an unfinished one).",
            ["orch_closed_blocker_refused.py"]),
        "delete-removes-the-id-from-both-sides": (
            "After the middle of a chain is deleted, its id stays in its dependent's blockedBy. "
            "The server's.",
            ["orch_delete_leaves_dangling_blocker.py"]),
        "rt07-deletion": ("As delete-removes-the-id-from-both-sides.", ["orch_delete_leaves_dangling_blocker.py"]),
        "rt04-circular-dependency": ("The second edge of a two-task cycle is accepted. The server's.", ["orch_cycle_accepted.py"]),
        "longer-cycles-refused-from-either-side": ("The edge closing a three-task cycle is accepted. The server's.", ["orch_longer_cycle_accepted.py"]),
        "concurrent-edge-additions-leave-no-cycle": ("Opposite edges are accepted even one after the other (rt04). The server's.", ["orch_cycle_accepted.py"]),
        "update-is-all-or-nothing": (
            "The patch's edge closes a cycle, which the server accepts, so the whole patch "
            "succeeds (the mapping changes the fields after the edges, so a refused edge would "
            "have left them). The server's.",
            ["orch_cycle_accepted.py"]),
        "rt06-multiple-blockers": (
            "Completing a blocker (advance to CLOSED) removes it from its dependent's blockedBy "
            "(\"Auto-unblocked 1 dependent(s)\"). The server's: S9 wants completion to rewrite "
            "no other task.",
            ["orch_close_removes_edges.py"]),
        "two-processes-creating-get-different-ids": (
            "ERROR, when it happens (in about half of the starts): of servers started at "
            "the same moment on a new database, one exits before answering initialize: "
            "`SQLiteError: database is locked` on `PRAGMA journal_mode = WAL`. The server's.",
            ["orch_concurrent_start_database_locked.py"], True),
        "concurrent-creates-get-unique-ids": (
            "ERROR, when it happens (in about half of the starts): four servers started at "
            "once on a new database, one exits before answering initialize (`database is "
            "locked`). When all four start, every create is kept (SQLite and optimistic "
            "versions). The server's.",
            ["orch_concurrent_start_database_locked.py"], True),
    },
    "mcp-shrimp-task-manager": {
        "blockers-must-be-completed-first": (
            "A completed task given a blocker (whole dependency list rewritten by update_task) is "
            "refused `無法更新已完成的任務` (mapped transition; S5 wants blocked for an unfinished "
            "blocker and success for a finished one). The server's: every change of a completed "
            "task is refused.",
            ["shrimp_completed_task_cannot_change.py"]),
        "non-ascii-text-kept-exactly": (
            "A subject of 200 crab emoji is refused by split_tasks (`too_big`, maximum 100, "
            "counted in UTF-16 units). The server's (S2 takes 200 characters).",
            ["shrimp_long_name_refused.py"]),
        "completed-is-final": (
            "in_progress -> pending: no tool moves a started task back; the mapping answers "
            "unsupported. The server's lack of a move S4 allows.",
            ["shrimp_no_way_back_to_pending.py"]),
        "edges-cannot-cross-lists": (
            "An edge to id 2, which exists only in another list (another server's data folder), "
            "reaches the server as \"2\" (the id table of this list does not know it) and is kept "
            "as a dependency. The server's: any id is accepted.",
            ["shrimp_unknown_id_dependency_kept.py", "shrimp_dangling_dependency_accepted.py"]),
        "rt05-non-existent-references": ("An edge to 999 is accepted and kept. The server's.", ["shrimp_unknown_id_dependency_kept.py", "shrimp_dangling_dependency_accepted.py"]),
        "delete-removes-the-id-from-both-sides": (
            "Deleting a task others depend on is refused (`無法刪除此任務，因為以下任務依賴於它`). "
            "The server's (S10 removes it and its references).",
            ["shrimp_delete_refused_with_dependents.py"]),
        "rt07-deletion": ("As delete-removes-the-id-from-both-sides.", ["shrimp_delete_refused_with_dependents.py"]),
        "rt04-circular-dependency": ("A two-task cycle is accepted by update_task. The server's.", ["shrimp_cycle_accepted.py"]),
        "longer-cycles-refused-from-either-side": ("A three-task cycle is accepted. The server's.", ["shrimp_longer_cycle_accepted.py"]),
        "self-edge-is-a-cycle": ("A task depending on itself is accepted. The server's.", ["shrimp_self_dependency_accepted.py"]),
        "update-is-all-or-nothing": (
            "The scenario's create with the description \"first\" (5 characters) is refused "
            "(`任務描述過短`, minimum 10). The server's (S2 takes any description).",
            ["shrimp_short_description_refused.py"]),
        "concurrent-creates-get-unique-ids": (
            "ERROR or FAIL, depending on the run: four processes creating at once lose "
            "acknowledged tasks and answer creates that name no task (\"\\n\\n\\n\", or the guide "
            "without its Task List), which the mapping cannot read an id from; reads meanwhile "
            "answer `## System Error … Unexpected end of JSON input` (a torn tasks.json). The "
            "server's: it rewrites tasks.json with no lock.",
            ["shrimp_concurrent_creates_lost.py", "shrimp_concurrent_create_answer_names_no_task.py"], True),
    },
}


# How each server's race anomalies were read (the witnesses in race-*.json).
ATOMIC = ("The mapping's `fetch` reads a create's or an update's answer with a get after the "
          "change, and its race report says so (`NOTE not atomic`): an answer can show another "
          "writer's later change, so some `nonlinearizable` witnesses (\"the answer showed "
          "blockedBy [10, 14] for [10]\") are the mapping's reading, not the server's state.")
RACE_REVIEW = {
    "dex": "Lost creates and edges are dex's: the acknowledged change is missing from the final "
           "listing, also in its reproduction (`dex_concurrent_creates_lost.py`), and some runs "
           "leave tasks.jsonl unreadable (`dex_concurrent_writers_corrupt_the_store.py`). " + ATOMIC,
    "mcp-taskmanager": "Lost creates and one id given to two tasks are the server's "
           "(`kazuph_concurrent_adds_lost.py`, `kazuph_concurrent_adds_same_id.py`); most refusals "
           "are `Request not found`: the list's request itself was lost from tasks.json. " + ATOMIC,
    "ohno-mcp": "Every writer is its own process: each writes back the database it loaded, so "
           "the others' creates and edges are lost (`ohno_second_process_loses_tasks.py`). " + ATOMIC,
    "task-orchestrator": "No change is lost (SQLite, optimistic versions: stale writes are "
           "refused as `conflict`, `database is locked` refusals as `io`). The `nonlinearizable` "
           "witnesses are the server's accepted cycles (\"it had to fail (cycle)\", "
           "`orch_cycle_accepted.py`), its completion that rewrites dependents (\"the answer "
           "showed blocks [] for [2]\" after a blocker is closed, `orch_close_removes_edges.py`), "
           "and answers read back after another writer's change (the mapping's). Its status "
           "steps and field changes read the task's version first (read-modify-write, stated).",
    "mcp-shrimp-task-manager": "Edges are changed only as whole lists, read and written by "
           "the mapping (read-modify-write, stated in hello and the race report): a lost edge "
           "under concurrency can be the mapping's as well as the server's, whose tasks.json has "
           "no lock either (`shrimp_concurrent_creates_lost.py`); reads meanwhile answer `## System "
           "Error … Unexpected end of JSON input` (`io` refusals). " + ATOMIC,
}


# What a server lacks that leaves more scenarios not judged than its `features` alone say.
NOT_JUDGED_NOTE = {
    "mcp-taskmanager": (
        "The server has no started status (a task is done or not; no tool takes a status), so "
        "its mapping's `status_from` never gives `in_progress` and hello says `statuses: "
        "completed, pending`: every scenario that starts a task is not judged from that step "
        "on (until 2026-11-27 they failed, S3, S4, S13 and S14 among them, for the status "
        "alone). What the server does have is shown by "
        "[`kazuph_no_in_progress_state.py`](repro/kazuph_no_in_progress_state.py)."),
}


def claims_by_repro():
    with open(os.path.join(HERE, "..", "..", "repro", "claims.toml"), "rb") as f:
        reg = tomllib.load(f)
    out = {}
    for c in reg["claim"]:
        out[os.path.basename(c["repro"])] = c
    return out


def race_lines(name):
    rows = []
    for path in sorted(glob.glob(os.path.join(HERE, name, "race-*.json"))):
        with open(path) as f:
            r = json.load(f)
        for w in r["workloads"]:
            if w.get("skipped"):
                rows.append(f"| {w['workload']} | skipped: {w['skipped']} | | |")
                continue
            found = ", ".join(f"{k} {v}" for k, v in w["anomalies"].items() if v) or "none"
            rows.append(f"| {w['workload']} | {w['acknowledged']} of {w['requests']} | {found} | {len(w['errors'])} |")
    return rows


def main(names):
    claims = claims_by_repro()
    bad = []
    for name in names:
        package, version, mapping = SERVERS[name]
        with open(os.path.join(HERE, name, "run.json")) as f:
            run = json.load(f)
        s = run["summary"]
        review = REVIEW[name]
        failing = [sc for sc in run["scenarios"] if sc["outcome"] in ("fail", "error")]
        ids = {sc["id"] for sc in failing}
        for sc in failing:
            if sc["id"] not in review:
                bad.append(f"{name}: {sc['id']} ({sc['outcome']}) has no review")
        for sid, r in review.items():
            if sid not in ids and not (len(r) > 2 and r[2]):
                bad.append(f"{name}: {sid} is reviewed but did not fail in run.json")
        lines = [
            f"# {package} {version}: the strict suite and the race through mappings/{mapping}",
            "",
            f"Made by `reports/mcp/run.sh {name}` (the run: [run.txt](run.txt), [run.json](run.json), "
            f"[run.md](run.md); the race, `--writers 4 --ops 20 --seed 1` per workload: "
            f"[race.txt](race.txt), `race-*.json`). What the server is, as found by calling it: "
            f"[NOTES.md](NOTES.md). This review: `python3 reports/mcp/review.py {name}`.",
            "",
            f"**{s['passed']} passed, {s['failed']} failed, {s.get('not_judged', 0)} not judged, "
            f"{s['errors']} errors, {s['skipped']} skipped.** Not judged: the steps that need an "
            "optional part the mapping does not declare (its `features`), and every step after.",
            "",
            "## Every failure, reviewed",
            "",
            "Each was read from the request, the expectation and the server's own answer (quoted in "
            "run.txt), against the mapping's calls for that request (hello's `mapping`), asking "
            "whose it is: the harness's and the mapping's were fixed (the docs' table lists what each "
            "run showed); what is left is the server's, and each has a reproduction that calls the "
            "server's tools without taskproof and shows the same behaviour.",
            "",
            "| scenario | outcome | rules | review | reproduction (last recorded answer) |",
            "|---|---|---|---|---|",
        ]
        for sc in sorted(failing, key=lambda x: x["id"]):
            how, repros = review.get(sc["id"], ("(no review)", []))[:2]
            cells = []
            for r in repros:
                c = claims.get(r)
                last = sorted((c or {}).get("last") or [], key=lambda x: x["date"])
                ans = f"{last[-1]['answer']}: {last[-1]['observed']}" if last else "not recorded"
                cells.append(f"[`{r}`](repro/{r}) ({ans})")
            lines.append(
                f"| {sc['id']} | {sc['outcome'].upper()} | {', '.join(sc.get('rules') or [])} | "
                f"{how} | {'<br>'.join(cells)} |")
        sometimes = [(sid, r) for sid, r in sorted(review.items())
                     if sid not in ids and len(r) > 2 and r[2]]
        if sometimes:
            lines += [
                "",
                "Reviewed, and failing in some runs but not in this one (the answer depends on how "
                "the server's processes interleave):",
                "",
            ] + [f"- {sid}: {r[0]}" for sid, r in sometimes]
        if NOT_JUDGED_NOTE.get(name):
            lines += ["", NOT_JUDGED_NOTE[name]]
        lines += [
            "",
            "## The race",
            "",
            "| workload | acknowledged of sent | anomalies | target errors |",
            "|---|---|---|---|",
        ] + race_lines(name) + [
            "",
            "A workload missing here ended without a report (race.txt says why: a final listing the "
            "server could not answer is itself a finding, reproduced by the concurrency scripts).",
            "",
            RACE_REVIEW[name],
            "",
        ]
        with open(os.path.join(HERE, name, "README.md"), "w") as f:
            f.write("\n".join(lines))
    if bad:
        print("\n".join(bad), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:] or list(SERVERS))
