#!/usr/bin/env python3
"""claude-code-controller beside the real Claude Code: a task the controllers' concurrent updates
leave unparsable is gone for Claude Code, which answers that it does not exist.

asks: With Claude Code (print mode, on the list `team`) having created task 1, and two programs
with a controller of the team then updating task 1 at once until its file no longer parses (at
most 10 rounds of 200 updates each), does Claude Code's TaskGet of task 1 then answer that the task
is not found, with Claude Code 2.1.332 and with 2.1.112?

The controller rewrites task files in place with no lock (concurrent_updates_corrupt_the_file.py);
Claude Code leaves a task file it cannot read out of its answers. Claude Code's versions:
CLAUDE_CODE_VERSIONS (default "2.1.332 2.1.112"), each driven by the minimal scripted model of
repro/lib/claude.py; the controllers by corrupt_shared_task.mjs, which uses only the package.
Seen in taskproof race --target claude-code@2.1.332 --target claude-code-controller@0.3.0
--workload fields (reports/claude-code-controller/mixed/).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))
import claude as C  # noqa: E402
import _ccc  # noqa: E402


def one(pkg, cc_version):
    C.install(cc_version)
    root = C.temp_dir("repro-ccc-unreadable-root-")
    home = C.temp_dir("repro-ccc-unreadable-home-")
    (home / ".claude").mkdir()
    (home / ".claude" / "tasks").symlink_to(root)
    cc = C.TaskSession(cc_version, root, "team")
    try:
        err, _, first = cc.create("claude code's task")
        if err or first != "1":
            raise C.CouldNotRun(f"Claude Code's first TaskCreate gave {first!r} (error {err})")
        r = subprocess.run(["node", str(HERE / "corrupt_shared_task.mjs"), "run", "team"], capture_output=True,
                           text=True, timeout=150,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                                "CCC_PACKAGE": str(pkg)})
        sys.stderr.write(r.stderr)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        C.log(f"controllers: {out}")
        got_err, got = cc.call("TaskGet", {"taskId": "1"})
        C.log(f"Claude Code {cc_version} TaskGet 1: error {got_err}: {got[:200]!r}")
        listed = cc.call("TaskList", {})[1]
    finally:
        cc.close()
    not_found = "not found" in got.lower()
    answer = out["corrupt"] and not_found
    return answer, (f"Claude Code {cc_version} created task 1; the controllers' updates left 1.json "
                    f"{out['detail']} after {out['rounds']} round(s); Claude Code's TaskGet 1: "
                    f"{' '.join(got.split())[:80]!r}; its TaskList: {' '.join(listed.split())[:80]!r}")


def main():
    a = C.parse_args(_ccc.DEFAULT_VERSION)
    pkg = _ccc.install(a.version)
    results = [one(pkg, v) for v in os.environ.get("CLAUDE_CODE_VERSIONS", "2.1.332 2.1.112").split()]
    C.finish(a.version, all(r[0] for r in results), "; ".join(r[1] for r in results))


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else _ccc.DEFAULT_VERSION))
