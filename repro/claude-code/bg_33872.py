"""Claim (anthropics/claude-code#33872 in docs/claude-code.md: "2.1.112 delivered the
notification inside the TaskOutput result that consumed it; 2.1.276 sent none after a blocking
TaskOutput returned the result"): after a blocking output read consumed a finished task's
result, no <task-notification> for the task reaches the model.

The measurement of bg_output_consumed.py (one task `sleep 1; printf x`, one blocking TaskOutput,
5 s, one more prompt, 3 s; notifications looked for in every message of every agent request,
any role). Answer yes when the task was never notified to the model.
"""
import os, sys
sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
sys.path.insert(0, here)
import claude as C
import bg_output_consumed


def main():
    a = C.parse_args("2.1.276")
    C.install(a.version)
    r = bg_output_consumed.measure(a.version)
    C.finish(a.version, r["n"] == 0, r["summary"])


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.276"))
