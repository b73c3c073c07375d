"""Claim (docs/claude-code.md, "Agent teams driven by the scripted model"; issue 54;
anthropics/claude-code#23629): with agent teams on, a `TaskUpdate` of a task of the session's
own list made while a team exists is kept: after `TeamDelete`, `TaskList` shows the status
that `TaskUpdate` answered it set.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1: the
lead creates two tasks (the session's own list) and sets #2 in_progress, calls `TeamCreate
{team_name: "alpha"}`, then `TaskUpdate {taskId: "2", status: "completed"}`, then
`TeamDelete`, then `TaskList`. Answer yes when the last `TaskList` shows #2 completed (or,
when `TaskUpdate` did not answer success, shows what it said). The observation gives each
answer and the task files of every list after each step. A version without `TeamCreate` (2.1.27
as published, 2.1.276 and later) cannot answer.
"""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def files(s):
    out = {}
    for p in sorted((s.config / "tasks").iterdir()):
        if p.is_dir():
            out[p.name[:8]] = {n: json.loads((p / n).read_text()).get("status")
                               for n in sorted(os.listdir(p)) if n.endswith(".json")}
    return out


def main():
    a = C.parse_args("2.1.34")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-team-update-"))
    s.env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] = "1"
    i = s.argv.index("--allowedTools")
    s.argv[i + 1] += ",TeamCreate,TeamDelete"
    steps = []
    try:
        s.start()
        for subject in ("Alpha", "Beta"):
            s.turn([("TaskCreate", {"subject": subject, "description": subject, "activeForm": subject})])
        s.turn([("TaskUpdate", {"taskId": "2", "status": "in_progress"})])
        tools = {t.get("name") for e in list(s.model.log) for t in ((e.get("body") or {}).get("tools") or [])}
        if "TeamCreate" not in tools or "TeamDelete" not in tools:
            raise C.CouldNotRun(f"Claude Code {a.version} offers no TeamCreate/TeamDelete with agent teams on")
        steps.append(("before", files(s)))
        s.turn([("TeamCreate", {"team_name": "alpha", "description": "probe"})])
        update = s.turn([("TaskUpdate", {"taskId": "2", "status": "completed"})])[0][1]
        steps.append(("after TaskUpdate", files(s)))
        deleted = s.turn([("TeamDelete", {})])[0][1]
        steps.append(("after TeamDelete", files(s)))
        listed = s.turn([("TaskList", {})])[0][1]
    finally:
        s.close()
    ok_update = "Updated task #2" in update
    kept = ("#2 [completed]" in listed) if ok_update else True
    C.finish(a.version, kept,
             f"TaskUpdate answered {update[:60]!r}; TeamDelete answered {deleted[:60]!r}; TaskList then "
             f"{listed.replace(chr(10), ' | ')[:90]!r}; files (list: {{file: status}}) {steps}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.34"))
