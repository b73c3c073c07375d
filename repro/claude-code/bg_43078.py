"""Claim (anthropics/claude-code#43078, docs/claude-code.md: "reproduced on 2.1.112, 2.1.276,
2.1.277 and 2.1.332 by a task whose shell exits leaving a child (`setsid sleep 60 & exit 0`):
the task completes, is notified and evicted, the kill says 'No task found', the child runs
on; older versions say 'already completed', and the child runs on too"): the kill tool answers
"No task found" for a task while a process it started still runs.

Print mode. One task `setsid sleep 60 >/dev/null 2>&1 & printf x; exit 0`; once it was notified
(any message, any role; 10 s, then one more prompt) or 3 s passed, one kill call; then the
process table. Answer yes when the kill answered "No task found"/"not found" and the task's
`sleep 60` was still alive after it.
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
        (tid, out), = s.spawn(["setsid sleep 60 >/dev/null 2>&1 & printf x; exit 0"])
        per = s.wait_notified([tid], 10)
        if not per.get(tid):
            s.ping()
            per = s.wait_notified([tid], 3)
        notified = per.get(tid, 0)
        kerr, ktext = s.kill([tid])[0]
        time.sleep(1)
        alive = [p for p in s.procs() if "sleep 60" in p[2]]
    finally:
        s.close()
    nf = "no task found" in ktext.lower() or "not found" in ktext.lower()
    C.log(f"notified {notified}x; kill: {ktext!r}; alive: {alive}")
    said = C.re.sub(r"\s+", " ", ktext)[:90]
    C.finish(a.version, nf and bool(alive), f"notified {notified}x; {s.kill_tool[0]}: "
             f"{said!r}; the setsid child {'alive' if alive else 'gone'} 1 s after; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
