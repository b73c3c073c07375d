"""Claim (docs/claude-code.md, "What happens between requests"; for a restore of a reset list):
pending task files that another process writes back into a named list the terminal UI has just
reset are kept: a list with a task that is not completed is never reset (in every version
measured).

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan: create two
tasks, complete both, wait until the UI has deleted the task files (at most 15 s), wait 1 s,
then write both files back with status "pending" (each written to a temporary name in the
folder and renamed), and watch the folder every 50 ms for 15 s. Answer yes when both files are
still there after 15 s.
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import _restore_after_reset


if __name__ == "__main__":
    C.run_main(lambda: _restore_after_reset.main("pending"), (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
