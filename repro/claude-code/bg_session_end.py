"""Claim (timeline "background tasks ended with the session", 2.1.162 -> 2.1.163 and
2.1.291 -> 2.1.292; docs/background.md "Orphans": 2.1.17-2.1.19 exit and leave every task
running, 2.1.112 and 2.1.332 wait for their tasks, 2.1.276 and 2.1.277 end them and exit):
when a print-mode session's input ends while background tasks run, the CLI ends them.

Three never-ending tasks (`sleep 1000 & while :; do sleep 1000; done`, two sleeps each); the
CLI's standard input is closed; the CLI gets 20 s to exit. Answer yes when it exited and no
process of any task is alive 3 s later. The observed line says which way it failed: the CLI
exited leaving the tasks running, or it was still running (waiting for them) after 20 s.
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def main():
    a = C.parse_args("2.1.163")
    C.install(a.version)
    load = C.loadavg()
    s = C.BgSession(a.version)
    try:
        s.spawn(["sleep 1000 & while :; do sleep 1000; done"] * 3)
        deadline = time.monotonic() + 10
        while len(s.procs()) < 9 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1)  # the shells' second sleeps and the CLI's wrappers
        before = len(s.procs())
        t = time.monotonic()
        s.cli.close_input()
        rc = s.cli.wait_exit(20)
        took = time.monotonic() - t
        if rc is not None:
            time.sleep(3)
        alive = len(s.procs())
    finally:
        s.close()
    if rc is None:
        obs = f"the CLI was still running {took:.0f} s after its input ended, {alive} of {before} task processes alive"
    else:
        obs = f"the CLI exited ({rc}) {took:.1f} s after its input ended; {alive} of {before} task processes alive 3 s later"
    C.finish(a.version, rc is not None and alive == 0, obs + f"; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.163"))
