"""Shared by the oh-my-opencode reproductions of what the plugin does in a Claude Code list:
the real Claude Code (print mode, repro/lib/claude.py) creates tasks in list `l` of a fresh
root, then one `opencode run` with oh-my-opencode's `storage_path` at that list's folder makes
the given task-tool calls (repro/lib/opencode.py). No code of taskproof's."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C  # noqa: E402
import opencode as O  # noqa: E402

PLUGIN, OPENCODE, CLAUDE = "4.19.4", "1.18.33", "2.1.332"


def kind(path):
    """What a file is: missing, empty, JSON or other text."""
    if not os.path.exists(path):
        return "missing"
    text = open(path, encoding="utf-8", errors="replace").read()
    if text == "":
        return "empty"
    try:
        json.loads(text)
        return "JSON"
    except ValueError:
        return "text"


def run(body):
    """body(list_dir, cc_ids, omo_results) -> (answer, observed); the plugin's calls are
    `calls(cc_ids)`."""
    def main(calls, judge):
        a = C.parse_args(PLUGIN)
        load = C.loadavg()
        root = C.temp_dir("repro-omo-root-")
        cc = C.TaskSession(CLAUDE, root, "l")
        try:
            ids = [cc.create(f"claude code task {i}")[2] for i in (1, 2)]
        finally:
            cc.close()
        folder = root / "l"
        before = {n: kind(folder / n) for n in (".lock", ".highwatermark")}
        inst = O.install(a.version, OPENCODE)
        results = O.run_calls(inst, folder, calls(ids))
        after = {n: kind(folder / n) for n in (".lock", ".highwatermark")}
        answer, observed = judge(folder, ids, results, before, after)
        C.finish(a.version, answer, f"{observed}; Claude Code {CLAUDE}, opencode {OPENCODE}; load {load}")

    C.run_main(lambda: main(*body), sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else PLUGIN)
