"""Claim (docs/claude-code.md, "What happens between requests"; for a restore of a reset list):
while the terminal UI that reset a finished named list keeps running, completed task files that
another process writes back into the list are kept (not deleted again) from 2.1.112 on: after a
reset the UI's task store marks the list hidden and arms its 5 s timer again only once it has
seen a task that is not completed. 2.1.17 has no such latch: it finds the files again at its
next poll (every 5 s) and deletes them 5 s later.

Terminal UI (a pseudo-terminal), scripted model, CLAUDE_CODE_TASK_LIST_ID=shared-plan: create two
tasks, complete both, wait until the UI has deleted the task files (at most 15 s), wait 1 s,
then write both files back as they were (completed; each written to a temporary name in the
folder and renamed), and watch the folder every 50 ms for 15 s. Answer yes when both files are
still there after 15 s. The observed line says when they vanished otherwise.
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import _restore_after_reset


if __name__ == "__main__":
    C.run_main(lambda: _restore_after_reset.main("completed"), (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
