"""Shared by the reproductions of oh-my-opencode alone: one `opencode run` with the plugin's
task system on and storage_path at an empty folder, the given steps played as model turns
(repro/lib/opencode.py run_steps), the claim's question answered from the tools' answers and
the folder's files. No code of taskproof's."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C  # noqa: E402
import opencode as O  # noqa: E402

PLUGIN, OPENCODE = "4.19.4", "1.18.33"


def task_id(result):
    """The id a task_create result names."""
    err, text = result
    if err:
        raise C.CouldNotRun(f"task_create failed: {text}")
    return json.loads(text)["task"]["id"]


def answer(result):
    """A tool's answer as JSON ({} when it is not)."""
    try:
        return json.loads(result[1])
    except ValueError:
        return {}


def files(folder):
    return {p.name: json.loads(p.read_text()) for p in folder.glob("T-*.json")}


def run(steps, judge):
    """steps: functions of the earlier steps' results returning calls; judge(results, files)
    -> (answer, observed)."""
    def main():
        a = C.parse_args(PLUGIN)
        load = C.loadavg()
        folder = C.temp_dir("repro-omo-list-")
        inst = O.install(a.version, OPENCODE)
        results = O.run_steps(inst, folder, steps)
        ok, observed = judge(results, files(folder))
        C.finish(a.version, ok, f"{observed}; opencode {OPENCODE}; load {load}")

    C.run_main(main, sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else PLUGIN)
