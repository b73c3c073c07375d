#!/usr/bin/env python3
"""claude-code-controller beside the real Claude Code on one team list: the controller's
createTask takes an id Claude Code just gave and replaces Claude Code's task.

asks: With Claude Code (print mode, its own TaskCreate, on the list `team`) and a controller of
the team `team` on one task folder, the controller init()ed after Claude Code's first task, does
the controller's first createTask, made after Claude Code's second TaskCreate, get that task's
id and leave its file holding the controller's task (Claude Code's `.lock` beside it untouched),
with Claude Code 2.1.332 and with 2.1.112?

Claude Code 2.1.332 and 2.1.112 by default (CLAUDE_CODE_VERSIONS names others), each driven by the
minimal scripted model of repro/lib/claude.py; the controller by driver.mjs, which uses only the
package, with HOME whose `.claude/tasks` is the shared folder. The controller counts its next id
once, in init(), and takes no lock; Claude Code picks the next id under its lock from the files
and `.highwatermark`. Issue 48 of taskproof (there: 15 creates of each, 2 to 4 of Claude Code's
left on disk); taskproof race --target claude-code@2.1.332 --target claude-code-controller@0.3.0
(reports/claude-code-controller/mixed/).
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


def one(version, pkg, cc_version):
    C.install(cc_version)
    root = C.temp_dir("repro-ccc-mixed-root-")
    home = C.temp_dir("repro-ccc-mixed-home-")
    (home / ".claude").mkdir()
    (home / ".claude" / "tasks").symlink_to(root)
    cc = C.TaskSession(cc_version, root, "team")
    node = subprocess.Popen(["node", str(HERE / "driver.mjs"), "team"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                                 "CCC_PACKAGE": str(pkg)})

    def ctl(line):
        node.stdin.write(line + "\n")
        node.stdin.flush()
        out = json.loads(node.stdout.readline())
        C.log(f"controller {line}: {out}")
        return out

    try:
        err1, _, cc1 = cc.create("claude code's first")
        C.log(f"Claude Code {cc_version} TaskCreate -> {cc1} (error {err1})")
        if not ctl("init")["ok"]:
            raise C.CouldNotRun("the controller's init() failed")
        err2, _, cc2 = cc.create("claude code's second")
        C.log(f"Claude Code {cc_version} TaskCreate -> {cc2} (error {err2})")
        mine = ctl("create the controller's first")["id"]
        files = cc.files()
        on_disk = json.loads(files.get(f"{cc2}.json", "{}")).get("subject")
        seen_by_cc = cc.call("TaskGet", {"taskId": str(cc2)})[1]
        listed = ctl("list").get("tasks")
    finally:
        node.stdin.close()
        node.wait(10)
        cc.close()
    answer = (not err2) and mine == cc2 and on_disk == "the controller's first" and ".lock" in files
    return answer, (f"Claude Code {cc_version} created {cc1} then {cc2}; the controller (init after {cc1}) "
                    f"created {mine}; {cc2}.json holds {on_disk!r}; Claude Code's TaskGet {cc2}: "
                    f"{' '.join(seen_by_cc.split())[:80]!r}; the controller lists {listed}; folder: {' '.join(sorted(files))}")


def main():
    a = C.parse_args(_ccc.DEFAULT_VERSION)
    pkg = _ccc.install(a.version)
    results = [one(a.version, pkg, v) for v in os.environ.get("CLAUDE_CODE_VERSIONS", "2.1.332 2.1.112").split()]
    C.finish(a.version, all(r[0] for r in results), "; ".join(r[1] for r in results))


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else _ccc.DEFAULT_VERSION))
