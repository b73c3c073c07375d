"""Shared by the print-mode task reproductions found by taskproof fuzz (reports/fuzz-recall.md):
one Claude Code CLI in print mode on one named list, a body that makes tool calls through it and
answers the claim's question from the answers and the list's files. No code of taskproof's."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C  # noqa: E402


def files(s):
    """The list's task files, parsed, by name (`1.json`)."""
    return {k: json.loads(v) for k, v in s.files().items() if k.endswith(".json")}


def field(f, task, key):
    return f.get(f"{task}.json", {}).get(key)


def verdict(r):
    return "error" if r[0] else "ok"


def run(body, default="2.1.332"):
    """Runs `body(session) -> (answer, observed)` on the version `--version` names."""
    def main():
        a = C.parse_args(default)
        C.install(a.version)
        load = C.loadavg()
        s = C.TaskSession(a.version, C.temp_dir("repro-cc-root-"), "l")
        try:
            answer, observed = body(s)
        finally:
            s.close()
        C.finish(a.version, answer, f"{observed}; load {load}")

    C.run_main(main, sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else default)
