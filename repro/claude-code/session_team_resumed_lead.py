"""Claim (docs/check.md, "Lists under agent teams"; issue 54): with agent teams on, the
team a session resumed with `claude --resume <session id>` leads is keyed to that session:
its record teams/<team>/config.json names the resumed id as leadSessionId. When it does not
(a fresh id), only the running process's record sessions/<pid>.json (sessionId, cwd,
startedAt) and the team's createdAt and lead cwd tie the team to the session, which is what
`taskproof check` uses to find the list a resumed session reads.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1 and a
settings.json hook that appends every PreToolUse event: create one task, /exit, start again
with --resume <session id>, call TaskList. Read, while the resumed CLI runs, its
sessions/<pid>.json and every team record. Answer yes when a team record names the resumed
session id as leadSessionId. The observation gives the team's leadSessionId, the gap between
its createdAt and the process's startedAt, whether its lead's cwd is the process's, and the
session id the resumed CLI's hook event carried.
"""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-team-resumed-lead-"))
    s.env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] = "1"
    events = s.root / "events.jsonl"
    hook = {"type": "command", "command": f"sh -c 'cat >> {events}; echo >> {events}'"}
    (s.config / "settings.json").write_text(json.dumps(
        {"hooks": {"PreToolUse": [{"matcher": "TaskList", "hooks": [hook]}]}}))
    try:
        s.start()
        C.log("TaskCreate", s.turn([("TaskCreate", {"subject": "Alpha", "description": "a", "activeForm": "A"})]))
        ids = s.session_ids()
        if len(ids) != 1:
            raise C.CouldNotRun(f"expected one session id before /exit, saw {ids}")
        sid = ids[0]
        if not s.exit():
            raise C.CouldNotRun("the CLI did not end within 30 s of /exit")
        s.start(["--resume", sid])
        C.log("TaskList", s.turn([("TaskList", {})]))
        procs = [json.loads(p.read_text()) for p in sorted((s.config / "sessions").glob("*.json"))]
        teams = [json.loads(p.read_text()) for p in sorted((s.config / "teams").glob("*/config.json"))]
    finally:
        s.close()
    hooked = [json.loads(l).get("session_id") for l in events.read_text().splitlines() if l.strip()] \
        if events.exists() else []
    if len(procs) != 1 or not teams:
        raise C.CouldNotRun(f"expected one process record and a team; saw {len(procs)} and {len(teams)}")
    p = procs[0]
    parts = []
    for t in teams:
        lead = next((m for m in t.get("members", []) if m.get("agentType") == "team-lead"), {})
        gap = t.get("createdAt", 0) - p.get("startedAt", 0)
        parts.append(f"team {t.get('name')} leadSessionId {str(t.get('leadSessionId'))[:8]}, "
                     f"createdAt {gap:+d} ms from the process's startedAt, lead cwd is the process's: "
                     f"{lead.get('cwd') == p.get('cwd')}, leadProcess: {'leadProcess' in t}")
    keyed = any(t.get("leadSessionId") == sid for t in teams)
    C.finish(a.version, keyed,
             f"resumed {sid[:8]}; process record sessionId {str(p.get('sessionId'))[:8]}; "
             + "; ".join(parts)
             + f"; the hook's session_id {[h[:8] for h in hooked if h]}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
