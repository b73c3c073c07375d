"""Claim omo-task-hidden-after-claude-code-update: a task oh-my-opencode created in a list
(storage_path at it) that Claude Code 2.1.332 then updates there (TaskUpdate status and owner,
as an agent claims it) can no longer be read by the plugin: Claude Code rewrites the file with
its own fields only, without the plugin's required `threadID`, so the plugin's task_get answers
`{"task": null}` and its task_list leaves it out.
Asks: after Claude Code's TaskUpdate, is the task gone from both task_get and task_list?
Exit 0 with a JSON verdict."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C  # noqa: E402
import opencode as O  # noqa: E402
from _beside import CLAUDE, OPENCODE, PLUGIN  # noqa: E402


def main():
    a = C.parse_args(PLUGIN)
    load = C.loadavg()
    root = C.temp_dir("repro-omo-root-")
    folder = root / "l"
    folder.mkdir(parents=True)
    inst = O.install(a.version, OPENCODE)
    (err, text), = O.run_calls(inst, folder, [("task_create", {"subject": "plugin task"})])
    if err:
        raise C.CouldNotRun(f"task_create failed: {text}")
    tid = json.loads(text)["task"]["id"]
    had = "threadID" in json.loads((folder / f"{tid}.json").read_text())
    cc = C.TaskSession(CLAUDE, root, "l")
    try:
        cc_err, cc_text = cc.call("TaskUpdate", {"taskId": tid, "status": "in_progress", "owner": "claude"})
    finally:
        cc.close()
    kept = "threadID" in json.loads((folder / f"{tid}.json").read_text())
    (ge, gt), (le, lt) = O.run_calls(inst, folder, [("task_get", {"id": tid}), ("task_list", {})])
    got = json.loads(gt).get("task") if not ge else "error"
    listed = [t["id"] for t in json.loads(lt).get("tasks", [])] if not le else "error"
    answer = (not cc_err) and got is None and listed == []
    C.finish(a.version, answer,
             f"threadID before {had}, after Claude Code's TaskUpdate ({cc_text!r}) {kept}; task_get {gt[:80]!r}; "
             f"task_list ids {listed}; Claude Code {CLAUDE}, opencode {OPENCODE}; load {load}")


C.run_main(main, PLUGIN)
