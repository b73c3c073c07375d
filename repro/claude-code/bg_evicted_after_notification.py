"""Claim (docs/background.md "Eviction at notification"; docs/claude-code.md: "after its
notification TaskOutput and TaskStop answer 'No task found with ID' (2.1.112 and later), while
2.1.17 - 2.1.19 answer 'is not running (status: completed)'"): once a completed background
task was notified to the model, the kill tool (and the output tool, where the version has one)
answers that it knows no such task.

Print mode. One task `printf done; exit 0`; wait until its <task-notification> is in the
model's conversation (any message, any role; up to 10 s, then one more prompt) or, for versions
that never notify, 3 s; then one kill call and, where there is one, one output call.
Answer yes when the kill's answer (and the output tool's) says "No task found"/"not found".
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def main():
    a = C.parse_args("2.1.112")
    C.install(a.version)
    load = C.loadavg()
    s = C.BgSession(a.version)
    try:
        (tid, out), = s.spawn(["printf done; exit 0"])
        per = s.wait_notified([tid], 10)
        if not per.get(tid):
            s.ping()
            per = s.wait_notified([tid], 3)
        notified = per.get(tid, 0)
        kerr, ktext = s.kill([tid])[0]
        otext = None
        if s.output_tool:
            oerr, otext = s.output(tid)
    finally:
        s.close()
    nf = lambda t: t is not None and ("no task found" in t.lower() or "not found" in t.lower())
    C.log(f"notified {notified}x; {s.kill_tool[0]}: {ktext!r}; {s.output_tool and s.output_tool[0]}: {otext!r}")
    ok = nf(ktext) and (otext is None or nf(otext))
    short = lambda t: C.re.sub(r"\s+", " ", t or "")[:90]
    C.finish(a.version, ok, f"notified {notified}x, then {s.kill_tool[0]}: {short(ktext)!r}; "
             f"{(s.output_tool or ('no output tool',))[0]}: {short(otext)!r}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.112"))
