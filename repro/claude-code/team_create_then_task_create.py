"""Claim (docs/claude-code.md, "Agent teams driven by the scripted model"; issue 54;
anthropics/claude-code#22235): with agent teams on, after the lead creates a team with
`TeamCreate`, its `TaskCreate` still writes the session's own list (`tasks/<session id>/`)
rather than the team's (`tasks/<team>/`), so teammates, who read the team's list, see none.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1: the
lead calls `TeamCreate {team_name: "alpha"}`, then `TaskCreate`. Answer yes when the task
file lands in the session's own list and the team's list holds none. A version that offers
no `TeamCreate` (2.1.27 as published: its cli.js has neither the tool nor the variable;
2.1.276 and later: the team is the session's own) cannot answer.
"""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.34")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-team-create-task-"))
    s.env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] = "1"
    i = s.argv.index("--allowedTools")
    s.argv[i + 1] += ",TeamCreate"
    try:
        s.start()
        s.turn([("TaskList", {})])
        tools = {t.get("name") for e in list(s.model.log) for t in ((e.get("body") or {}).get("tools") or [])}
        if "TeamCreate" not in tools:
            raise C.CouldNotRun(f"Claude Code {a.version} offers no TeamCreate with agent teams on; tools: "
                                f"{sorted(t for t in tools if t and t.startswith(('Task', 'Team', 'Agent', 'Send')))}")
        made = s.turn([("TeamCreate", {"team_name": "alpha", "description": "probe"})])[0][1]
        created = s.turn([("TaskCreate", {"subject": "Alpha", "description": "a", "activeForm": "A"})])[0][1]
        sid = s.session_ids()[0]
        lists = {p.name: sorted(n for n in os.listdir(p) if n.endswith(".json")) for p in (s.config / "tasks").iterdir() if p.is_dir()}
    finally:
        s.close()
    own = lists.get(sid, [])
    team = lists.get("alpha", [])
    C.finish(a.version, bool(own) and not team,
             f"TeamCreate answered {made[:60]!r}; TaskCreate answered {created[:50]!r}; task files: "
             f"session's own list {sid[:8]} {own}, team's list alpha {team}; all lists {sorted(lists)}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.34"))
