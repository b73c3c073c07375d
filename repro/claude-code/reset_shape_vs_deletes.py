"""Claim (docs/claude-code.md, "What happens between requests"; for a restore that must tell a
reset from deliberate deletes): the folder a reset of a finished named list leaves cannot be
told apart from the one the agent leaves by deleting every task itself with TaskUpdate
{taskId, status: "deleted"} (2.1.20 and later): both leave exactly `.lock` (empty) and
`.highwatermark` holding the highest id, nothing else (no tombstone, no journal). Only mtimes
differ, and only in when they were written: the reset writes `.highwatermark` and removes the
task files together about 5 s after the last completion; a delete writes it when it removes the
task with the highest id so far (deletes in descending id order leave `.highwatermark` older
than the folder's last change).

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan, three
fresh config folders: (1) create two tasks, complete both, wait 8 s (the reset); (2) create two
tasks, the agent deletes 1 then 2; (3) the same deleting 2 then 1. Answer yes when (1) and (2)
leave the same file names, sizes and contents. The observed line gives, for each, the files,
`.highwatermark`'s content, and its mtime relative to the folder's own mtime. 2.1.17 has no
"deleted" status (the update is refused), so its answer is no.
"""
import os, re, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui


def run(version, how):
    s = tui.TaskUi(version, C.temp_dir(f"repro-cc-{how}-"), task_list="shared-plan")
    folder = s.tasks / "shared-plan"
    answers = []
    try:
        s.start()
        for subject in ("Alpha", "Beta"):
            s.turn([("TaskCreate", {"subject": subject, "description": subject.lower(), "activeForm": "Doing " + subject})])
        if how == "reset":
            for i in ("1", "2"):
                answers += s.turn([("TaskUpdate", {"taskId": i, "status": "completed"})])
        else:
            for i in (("1", "2") if how == "delete-1-2" else ("2", "1")):
                answers += s.turn([("TaskUpdate", {"taskId": i, "status": "deleted"})])
        t0 = time.monotonic()
        while time.monotonic() - t0 < 8:
            time.sleep(0.1)
        state = tui.folder_state(folder)
        dir_mtime = os.stat(folder).st_mtime_ns
    finally:
        s.close()
    C.log(how, answers, state)
    return state, dir_mtime, answers


def describe(state, dir_mtime):
    parts = [f"{n} {size} B {text!r}" for n, (size, _, text) in sorted(state.items())]
    if ".highwatermark" in state:
        parts.append(f".highwatermark mtime {(state['.highwatermark'][1] - dir_mtime) / 1e9:+.3f} s from the folder's")
    return ", ".join(parts) or "empty"


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    reset = run(a.version, "reset")
    asc = run(a.version, "delete-1-2")
    refused = [t for err, t in asc[2] if err]
    if refused:
        m = re.search(r'"message": "((?:[^"\\]|\\.)*)"', refused[0])
        said = m.group(1).replace('\\"', '"') if m else " ".join(refused[0].split())[:120]
        C.finish(a.version, False, f"the agent cannot delete: TaskUpdate status deleted is refused "
                 f"(InputValidationError: {said}); the reset leaves {describe(*reset[:2])}; load {load}")
    desc = run(a.version, "delete-2-1")
    shape = lambda st: {n: (size, text) for n, (size, _, text) in st.items()}  # noqa: E731
    same = shape(reset[0]) == shape(asc[0])
    C.finish(a.version, same,
             f"reset: {describe(*reset[:2])}; deletes 1 then 2: {describe(*asc[:2])}; deletes 2 then 1: "
             f"{describe(*desc[:2])}; same names, sizes, contents (reset vs deletes 1, 2): {same}, "
             f"(reset vs deletes 2, 1): {shape(reset[0]) == shape(desc[0])}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
