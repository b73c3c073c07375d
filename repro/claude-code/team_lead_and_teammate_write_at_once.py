"""Claim (docs/race.md, "A team and another product: each writer charged"; issue 54): with agent
teams on (CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1) and CLAUDE_CODE_TASK_LIST_ID=race, the terminal
UI's lead and an in-process teammate it spawned can each keep one turn of task tool calls under
way at once: their TaskUpdate calls on one task of `race` are in flight together, both write
`race/1.json` (no task file anywhere else), and neither drops a metadata key the other wrote.

Terminal UI (a pseudo-terminal), a minimal scripted model of its own, permission mode `default`
with the task tools, Agent and SendMessage allowed. The lead creates "Shared" (#1); its next
prompt is answered with Agent (spawning w1 with a prompt carrying MARK-W1); from then on the
model answers each tool result of either conversation with the next TaskUpdate of #1 setting a
metadata key of its own (lead_I / w1_I = I), K of them each, without waiting for the other.
Runs RUNS times, each with a fresh CLI. Answer yes when in every run: both made K calls, at
least K/2 of the lead's calls were in flight while one of w1's was (from the model's answer
to the tool result that came back), the only task file is race/1.json, and it holds all 2K keys.
"""
import json, os, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui

K = 30


def one_run(argv, n):
    root = C.temp_dir(f"repro-cc-team-overlap-{n}-")
    config, work = root / "config", root / "work"
    work.mkdir(parents=True)
    C.make_config(config, work)
    lock = threading.Lock()
    go = threading.Event()
    counters = {"lead": 0, "w1": 0}
    events = []  # (who, "call"|"result", i, monotonic time)

    def rec(who, what, i):
        with lock:
            events.append((who, what, i, time.monotonic()))

    def update(who, i):
        rec(who, "call", i)
        return [C.tool_use_block(f"{who}-u{i}", "TaskUpdate",
                                 {"taskId": "1", "metadata": {f"{who}_{i}": i}})]

    def who(body):
        return "w1" if "MARK-W1" in json.dumps(body["messages"][0]) else "lead"

    def next_call(member, result_id):
        if result_id.startswith(f"{member}-u"):
            rec(member, "result", counters[member])
            counters[member] += 1
        if counters[member] < K:
            return update(member, counters[member])
        return None

    def agent(body, _n):
        last = C.last_turn_message(body) or {}
        text = json.dumps(last)
        member = who(body)
        results = [b for b in (last.get("content") or []) if isinstance(b, dict) and b.get("type") == "tool_result"]
        if member == "w1":
            if results:
                return next_call("w1", results[0].get("tool_use_id", ""))
            if "MARK-W1" in text:
                go.wait(60)  # w1 starts together with the lead's first update
                return update("w1", 0)
            return None
        if results:
            tid = results[0].get("tool_use_id", "")
            if tid == "lead-spawn":
                go.set()
                return update("lead", 0)
            if tid.startswith("lead-u"):
                return next_call("lead", tid)
            return None
        if "Do repro step 1." in text:
            return [C.tool_use_block("lead-create", "TaskCreate", {"subject": "Shared", "description": "by the lead"})]
        if "Do repro step 2." in text:
            return [C.tool_use_block("lead-spawn", "Agent", {"description": "teammate w1", "prompt": "MARK-W1 update task 1",
                                                             "name": "w1", "subagent_type": "general-purpose"})]
        return None

    model = C.FakeModel(agent, agent_tools=("TaskCreate", "Agent"))
    env = C.make_env(config, model.base_url, task_list="race",
                     extra={"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1", "TERM": "xterm-256color"})
    args = argv + ["--allowedTools", "TaskCreate,TaskUpdate,TaskList,TaskGet,Agent,SendMessage",
                   "--permission-mode", "default"]
    ui = tui.Tui.start(args, env=env, cwd=str(work))
    try:
        try:
            ui.wait_ready(120)
        except tui.TuiError as e:
            raise C.CouldNotRun(f"the CLI did not start: {e}") from e
        ui.wait_quiet(1, 10)
        ui.type("Do repro step 1.")
        deadline = time.monotonic() + 60
        while not (config / "tasks" / "race" / "1.json").exists():
            if time.monotonic() > deadline:
                raise C.CouldNotRun("step 1 wrote no race/1.json within 60 s")
            time.sleep(0.1)
        ui.wait_quiet(0.7, 10)
        started = time.monotonic()
        ui.type("Do repro step 2.")
        deadline = time.monotonic() + 120
        while counters["lead"] < K or counters["w1"] < K:
            if time.monotonic() > deadline:
                raise C.CouldNotRun(f"the updates did not finish within 120 s: {counters}")
            time.sleep(0.1)
        seconds = time.monotonic() - started
        files = sorted(str(p.relative_to(config / "tasks")) for p in (config / "tasks").glob("*/*.json"))
        meta = json.loads((config / "tasks" / "race" / "1.json").read_text()).get("metadata", {})
    finally:
        ui.end()
        model.close()
    spans = {"lead": {}, "w1": {}}
    for w, what, i, t in events:
        spans[w].setdefault(i, [None, None])[0 if what == "call" else 1] = t
    lead = [s for s in spans["lead"].values() if None not in s]
    w1 = [s for s in spans["w1"].values() if None not in s]
    overlapping = sum(1 for a in lead if any(a[0] < b[1] and b[0] < a[1] for b in w1))
    lost = [f"{w}_{i}" for w in ("lead", "w1") for i in range(K) if f"{w}_{i}" not in meta]
    ok = (len(lead) == K and len(w1) == K and overlapping >= K // 2
          and files == ["race/1.json"] and not lost)
    seen = (f"run {n}: {len(lead)}+{len(w1)} updates in {seconds:.1f} s, {overlapping} of the lead's "
            f"{len(lead)} in flight beside one of w1's; task files {files}; keys lost {lost}")
    C.log(seen)
    return ok, seen


def main():
    a = C.parse_args("2.1.332", runs=3)
    argv = C.claude_command(a.version)
    load = C.loadavg()
    results = [one_run(argv, n + 1) for n in range(a.runs)]
    yes = sum(ok for ok, _ in results)
    C.finish(a.version, yes == len(results),
             f"{yes} of {len(results)} runs: " + "; ".join(s for _, s in results) + f"; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
