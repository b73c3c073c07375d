"""Claim (docs/claude-code.md, "Agent teams driven by the scripted model"; issue 54): with
agent teams on and `teammateMode` `tmux`, a teammate the lead spawns runs as a Claude Code
process of its own in a tmux pane and is offered the task-list tools (TaskCreate, TaskGet,
TaskList, TaskUpdate), as an in-process teammate is, so it can claim and complete the team's
tasks.

The lead's terminal UI runs in a tmux session of a private tmux server started with the
environment a user's shell would give it (the scripted model's ANTHROPIC_BASE_URL and key,
CLAUDE_CONFIG_DIR, CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1, CLAUDE_CODE_ENABLE_TASKS=1), with
settings.json `{"teammateMode": "tmux"}`. The typed prompt makes the lead create task 1 and
spawn `w1` with `Agent`; w1 is scripted to set task 1 in_progress with `TaskUpdate`. Answer yes
when w1's requests offer all four task tools and task 1 ends in_progress. The observation
names w1's process (its command line), pane, backend in the team record, the task tools its
requests offered and what its TaskUpdate was answered. Needs tmux.
"""
import json, os, shlex, shutil, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C

TASK_TOOLS = {"TaskCreate", "TaskGet", "TaskList", "TaskUpdate"}


def main():
    a = C.parse_args("2.1.332")
    if not shutil.which("tmux"):
        raise C.CouldNotRun("tmux is not installed")
    C.install(a.version)
    load = C.loadavg()
    root = Path(C.temp_dir("repro-cc-tmux-teammate-"))
    config, work = root / "config", root / "config" / "work"
    work.mkdir(parents=True)
    work = work.resolve()
    C.make_config(config, work)
    (config / "settings.json").write_text(json.dumps({"teammateMode": "tmux"}))
    n = [0]

    def use(name, args):
        n[0] += 1
        return [{"type": "tool_use", "id": f"toolu_tmux_{n[0]}", "name": name, "input": args}]

    def agent(body, _):
        msgs = body.get("messages") or []
        done = json.dumps(msgs).count('"tool_result"')
        if "REPRO-W1" in json.dumps(msgs[:1]):
            return use("TaskUpdate", {"taskId": "1", "status": "in_progress"}) if done == 0 else None
        if "Do repro 1." in json.dumps(msgs):
            steps = [("TaskCreate", {"subject": "Alpha", "description": "a", "activeForm": "A"}),
                     ("Agent", {"description": "w1", "prompt": "REPRO-W1 start task 1", "name": "w1",
                                "subagent_type": "general-purpose"})]
            return use(*steps[done]) if done < len(steps) else None
        return None

    model = C.FakeModel(agent, agent_tools=("TaskCreate", "Agent", "SendMessage"))
    env = C.make_env(config, model.base_url, extra={
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1", "CLAUDE_CODE_ENABLE_TASKS": "1", "TERM": "xterm-256color"})
    argv = C.claude_command(a.version) + ["--permission-mode", "default", "--allowedTools",
                                          "TaskCreate,TaskUpdate,TaskList,TaskGet,Agent,SendMessage"]
    sock = f"repro-tmux-{os.getpid()}"
    tmux = ["tmux", "-L", sock]
    cmd = " ".join(shlex.quote(x) for x in argv)
    try:
        subprocess.run(tmux + ["new-session", "-d", "-s", "lead", "-x", "200", "-y", "50", "-c", str(work), cmd],
                       check=True, env={**os.environ, **env})
        screen = lambda t: subprocess.run(tmux + ["capture-pane", "-p", "-t", t], capture_output=True, text=True).stdout
        deadline = time.monotonic() + 90
        while "❯" not in screen("lead"):
            if time.monotonic() > deadline:
                raise C.CouldNotRun(f"no input box within 90 s: {screen('lead')[-300:]!r}")
            time.sleep(0.5)
        subprocess.run(tmux + ["send-keys", "-t", "lead", "Do repro 1.", "Enter"], check=True)
        w1 = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            w1 = [e for e in list(model.log) if e["kind"] == "agent"
                  and "REPRO-W1" in json.dumps((e["body"].get("messages") or [])[:1])]
            if any('"tool_result"' in json.dumps(e["body"].get("messages")) for e in w1):
                break
            time.sleep(0.5)
        procs = [l for l in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
                 if "--agent-name w1" in l]
        panes = subprocess.run(tmux + ["list-panes", "-a", "-F", "#{pane_id}"], capture_output=True, text=True).stdout.split()
        teams = [json.loads(p.read_text()) for p in sorted((config / "teams").glob("*/config.json"))]
        lists = [p for p in sorted((config / "tasks").glob("*/1.json"))]
        status = json.loads(lists[0].read_text()).get("status") if lists else None
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)
        model.close()
    if not w1:
        raise C.CouldNotRun(f"w1 sent no request (processes {procs}, panes {panes})")
    offered = sorted({t.get("name") for e in w1 for t in (e["body"].get("tools") or [])} & TASK_TOOLS)
    result = next((c.get("content") for e in w1 for msg in (e["body"].get("messages") or [])
                   for c in (msg.get("content") if isinstance(msg.get("content"), list) else [])
                   if isinstance(c, dict) and c.get("type") == "tool_result"), None)
    backend = [(m.get("name"), m.get("backendType")) for t in teams for m in t.get("members", [])]
    C.finish(a.version, set(offered) == TASK_TOOLS and status == "in_progress",
             f"w1 a process of its own: {bool(procs)} ({procs[0].split(' --agent-id')[0].rsplit('/', 1)[-1] + ' --agent-id' + procs[0].split(' --agent-id')[1][:60] if procs else '-'}…); "
             f"panes {panes}; members {backend}; task tools in w1's requests {offered}; its TaskUpdate answered "
             f"{str(result)[:110]!r}; task 1 {status}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
