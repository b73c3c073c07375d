"""Claim (docs/claude-code.md, "Agent teams driven by the scripted model"; issue 54): with agent
teams on (CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1, no CLAUDE_CODE_TASK_LIST_ID), the terminal UI's
lead spawns teammates with the Agent tool (a `name`, no team created by the model); they run in
the lead's own process (in-process members of the team record, no second CLI process) and send
their own requests to the lead's model, their first message being the lead's prompt; their task
tools write the team's list `session-<8 hex>`, which the lead's TaskList shows; /exit ends the CLI
with its teammates (asking first, "Exit and stop tasks", when one is still at work; confirmed),
deletes the team record and keeps the list.

Terminal UI (a pseudo-terminal), a minimal scripted model of its own, permission mode `default`
with the task tools, Agent and SendMessage allowed. Step 1: the lead creates "Alpha". Step 2: the
lead spawns w1 and w2 (prompts carrying MARK-W1 / MARK-W2); w1 claims #1 (in_progress, owner
w1), w2 creates "Beta". Step 3, once both teammates' results came back: the lead's TaskList.
Then /exit. Answer yes when the lead's TaskList shows "#1 [in_progress] Alpha (w1)" and
"#2 [pending] Beta", the team record listed w1 and w2 with backendType in-process while the CLI
ran no child process named claude, each teammate's requests began with its own prompt, and
after /exit the team folder is gone and both task files are still in the list folder.
"""
import json, os, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def main():
    a = C.parse_args("2.1.332")
    argv = C.claude_command(a.version)
    load = C.loadavg()
    root = C.temp_dir("repro-cc-team-")
    config, work = root / "config", root / "work"
    work.mkdir(parents=True)
    C.make_config(config, work)
    results = {}  # teammate -> [tool_result texts]
    lock = threading.Lock()
    lead_list = []

    def who(body):
        first = json.dumps(body["messages"][0])
        for m in ("W1", "W2"):
            if f"MARK-{m}" in first:
                return m.lower()
        return "lead"

    def agent(body, n):
        last = C.last_turn_message(body) or {}
        text = json.dumps(last)
        member = who(body)
        if member != "lead":
            done = [b for b in (last.get("content") or []) if isinstance(b, dict) and b.get("type") == "tool_result"]
            if done:
                with lock:
                    results.setdefault(member, []).append(C.result_text(done[0].get("content")))
                return None
            if member == "w1":
                return [C.tool_use_block("w1-claim", "TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "w1"})]
            return [C.tool_use_block("w2-create", "TaskCreate", {"subject": "Beta", "description": "by w2"})]
        if "tool_result" in text:
            for b in last.get("content") or []:
                if isinstance(b, dict) and b.get("tool_use_id") == "lead-list":
                    lead_list.append(C.result_text(b.get("content")))
            return None
        if "Do repro step 1." in text:
            return [C.tool_use_block("lead-create", "TaskCreate", {"subject": "Alpha", "description": "by the lead"})]
        if "Do repro step 2." in text:
            return [C.tool_use_block(f"lead-spawn-{m}", "Agent", {"description": f"teammate {m}", "prompt": f"MARK-{m.upper()} do your task", "name": m, "subagent_type": "general-purpose"}) for m in ("w1", "w2")]
        if "Do repro step 3." in text:
            return [C.tool_use_block("lead-list", "TaskList", {})]
        return None

    model = C.FakeModel(agent, agent_tools=("TaskCreate", "Agent"))
    env = C.make_env(config, model.base_url, extra={"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
                                                    "CLAUDE_CODE_ENABLE_TASKS": "1",
                                                    "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
                                                    "TERM": "xterm-256color"})
    args = argv + ["--allowedTools", "TaskCreate,TaskUpdate,TaskList,TaskGet,Agent,SendMessage",
                   "--permission-mode", "default"]
    ui = tui.Tui.start(args, env=env, cwd=str(work))
    try:
        try:
            ui.wait_ready(120)
        except tui.TuiError as e:
            raise C.CouldNotRun(f"Claude Code {a.version}: {e}") from e
        ui.wait_quiet(1, 10)
        ui.type("Do repro step 1.")
        deadline = time.monotonic() + 60
        while not any((config / "tasks").glob("*/1.json")):
            if time.monotonic() > deadline:
                raise C.CouldNotRun("step 1 wrote no task within 60 s")
            time.sleep(0.2)
        ui.wait_quiet(0.7, 10)
        ui.type("Do repro step 2.")
        deadline = time.monotonic() + 90
        while True:
            with lock:
                if len(results.get("w1", [])) and len(results.get("w2", [])):
                    break
            if time.monotonic() > deadline:
                raise C.CouldNotRun(f"the teammates' results did not come within 90 s: {results}")
            time.sleep(0.2)
        teams = sorted((config / "teams").iterdir())
        if len(teams) != 1:
            raise C.CouldNotRun(f"expected one team record, found {teams}")
        record = json.loads((teams[0] / "config.json").read_text())
        members = {m["name"]: m.get("backendType") for m in record.get("members", [])}
        children = [p for p in os.listdir("/proc") if p.isdigit() and _ppid(p) == ui.proc.pid and "claude" in _cmd(p)]
        ui.wait_quiet(1.0, 10)
        ui.type("Do repro step 3.")
        deadline = time.monotonic() + 60
        while not lead_list:
            if time.monotonic() > deadline:
                raise C.CouldNotRun("the lead's TaskList did not come within 60 s")
            time.sleep(0.2)
        listing = lead_list[0]
        folder = config / "tasks" / teams[0].name
        # The lead's turn ends, then the teammates' idle notifications give it short turns of
        # their own: /exit is typed once the UI was quiet for 1.5 s.
        time.sleep(2)
        ui.wait_quiet(1.5, 15)
        mark = ui.mark()
        ui.command("/exit")
        ended = ui.wait_exit(5)
        asked = False
        if not ended and ui.wait_for("Exit and stop tasks", 10, since=mark):
            # A teammate still at work: the UI asks before it ends them; a user confirms
            # the first choice.
            asked = True
            ui.press("\r")
        ended = ended or ui.wait_exit(30)
        if not ended:
            C.log("screen after /exit:", tui._compact(ui.tail(600))[-300:])
        team_gone = not teams[0].exists()
        files = sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []
    finally:
        ui.end()
        model.close()
    ok = ("#1 [in_progress] Alpha (w1)" in listing and "#2 [pending] Beta" in listing
          and members.get("w1") == "in-process" and members.get("w2") == "in-process"
          and not children and ended and team_gone and files == ["1.json", "2.json"])
    C.finish(a.version, ok,
             f"team {teams[0].name}, members {members}; child claude processes {len(children)}; "
             f"w1: {results.get('w1', [''])[0][:40]!r}, w2: {results.get('w2', [''])[0][:40]!r}; "
             f"lead TaskList {listing.replace(chr(10), ' | ')[:80]!r}; /exit ended: {ended} "
             f"(asked first about work still running: {asked}); "
             f"team record gone: {team_gone}; list files {files}; load {load}")


def _ppid(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _cmd(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
