"""Claim (docs/background.md "A SIGKILL of the CLI leaves every task alive on every version"):
after SIGKILL of the Claude Code process, every process of its running background tasks is
still alive.

Three never-ending tasks (two sleeps each, under the task's shell and the CLI's own wrapper);
SIGKILL to the CLI's pid only (as `kill -9 PID`); 3 s later the process table. Answer yes when
every task process seen before the kill is still alive.
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    s = C.BgSession(a.version)
    try:
        s.spawn(["sleep 1000 & while :; do sleep 1000; done"] * 3)
        deadline = time.monotonic() + 10
        while len(s.procs()) < 9 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1)  # the shells' second sleeps and the CLI's wrappers
        before = {p[0] for p in s.procs()}
        s.cli.sigkill_leader()
        rc = s.cli.wait_exit(10)
        time.sleep(3)
        after = {p[0] for p in s.procs()}
    finally:
        s.close()
    C.finish(a.version, bool(before) and before <= after,
             f"CLI ended ({rc}); {len(before & after)} of {len(before)} task processes alive 3 s after SIGKILL; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
