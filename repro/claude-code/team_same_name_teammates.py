"""Claim (docs/claude-code.md, "Agent teams driven by the scripted model"; issue 54;
anthropics/claude-code#23884): with agent teams on, a lead that spawns three teammates with the
one name `Writer` gets members `Writer`, `Writer-2` and `Writer-3`, and each teammate is told
the name it got: the request that starts the second one's conversation holds `Writer-2`.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1. On a
version with `TeamCreate` (2.1.34) the lead makes the team `alpha` and spawns with `Task`
(`name`, `team_name`); on later ones (no `TeamCreate`: the team is the session's own) with
`Agent` (`name`). Each spawn's prompt is the same. Answer yes when the team record has the
three suffixed members and the first request of every teammate's conversation names that
teammate's own name (a teammate's conversation starts with `<teammate-message
teammate_id="team-lead" …>`; which one it is is read from the team record's order and the
idle notification each one sends the lead). The observation says what each was told.
"""
import json, os, re, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui

PROMPT = "You are a writer of this team. Say OK."


def text_of(body):
    sysp = body.get("system")
    s = sysp if isinstance(sysp, str) else " ".join(c.get("text", "") for c in (sysp or []) if isinstance(c, dict))
    return s + " " + json.dumps(body.get("messages") or [])


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = tui.TaskUi(a.version, C.temp_dir("repro-cc-team-same-name-"))
    s.env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] = "1"
    i = s.argv.index("--allowedTools")
    s.argv[i + 1] += ",TeamCreate,Task,Agent,SendMessage"
    s.argv += ["--permission-mode", "default"]
    try:
        s.start()
        s.turn([("TaskList", {})])
        tools = {t.get("name") for e in list(s.model.log) for t in ((e.get("body") or {}).get("tools") or [])}
        if "TeamCreate" in tools:
            s.turn([("TeamCreate", {"team_name": "alpha", "description": "writers"})])
            spawn = ("Task", {"description": "write", "prompt": PROMPT, "name": "Writer",
                              "team_name": "alpha", "subagent_type": "general-purpose"})
        elif "Agent" in tools:
            spawn = ("Agent", {"description": "write", "prompt": PROMPT, "name": "Writer",
                               "subagent_type": "general-purpose"})
        else:
            raise C.CouldNotRun(f"neither TeamCreate nor Agent among the tools: {sorted(t for t in tools if t)}")
        answers = [s.turn([spawn])[0][1] for _ in range(3)]
        time.sleep(3)
        teams = [json.loads(p.read_text()) for p in sorted((s.config / "teams").glob("*/config.json"))]
        log = list(s.model.log)
    finally:
        s.close()
    members = [m.get("name") for t in teams for m in t.get("members", []) if m.get("name") != "team-lead"]
    firsts = []
    for e in log:
        b = e.get("body") or {}
        msgs = b.get("messages") or []
        # A conversation's first request: no answer of the model yet, the spawn prompt in it.
        first_turn = msgs and all(m.get("role") != "assistant" for m in msgs)
        if first_turn and 'teammate_id=\\"team-lead\\"' in json.dumps(msgs) and PROMPT in json.dumps(msgs):
            firsts.append(text_of(b))
    told = [sorted(set(re.findall(r"Writer(?:-\d)?", t.replace(PROMPT, "")))) for t in firsts]
    suffixed = members == ["Writer", "Writer-2", "Writer-3"]
    each_told = (suffixed and len(firsts) == 3
                 and any("Writer-2" in t for t in firsts) and any("Writer-3" in t for t in firsts))
    named = []
    for x in answers:
        m = re.search(r"name: (\S+)", x)
        named.append(m.group(1) if m else x[:40])
    C.finish(a.version, each_told,
             f"spawned via {spawn[0]}: answers name {named}; members {members}; {len(firsts)} "
             f"teammate conversations started, the names each first request holds besides the "
             f"prompt: {told}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
