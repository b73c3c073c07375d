"""Claim cc-tasks-list-name-leaving-the-root-accepted: a task list named `../escaped`
(CLAUDE_CODE_TASK_LIST_ID) is accepted, not refused: TaskCreate succeeds, and the task is kept
in a folder whose name Claude Code makes from it inside its tasks folder, not beside it (found
by taskproof fuzz, reports/fuzz-recall.md).

Print mode. Answer yes when TaskCreate succeeds; where the task file landed (inside or outside
the tasks folder) is reported. Strict contract: S13 expects such a list name `invalid`.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C  # noqa: E402


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    base = C.temp_dir("repro-cc-base-")
    root = base / "tasks"
    root.mkdir()
    s = C.TaskSession(a.version, root, "../escaped")
    try:
        err, text, tid = s.create("escape")
    finally:
        s.close()
    found = sorted(str(p.relative_to(base)) for p in base.rglob("*.json"))
    inside = [f for f in found if f.startswith("tasks/")]
    C.finish(a.version, not err, f"TaskCreate in list '../escaped' -> {'error' if err else 'ok'} "
             f"({text[:60]!r}); task files under the tasks folder's parent: {found}; "
             f"all inside the tasks folder: {len(inside) == len(found)}; load {load}")


if __name__ == "__main__":
    C.run_main(main, sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332")
