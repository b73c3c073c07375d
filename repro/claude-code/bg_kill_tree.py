"""Claim (anthropics/claude-code#84464 "not reproduced", docs/claude-code.md: "every kill reached
every process of the tree, a setsid grandchild included, within 0.75 s, on every version"):
the kill tool ends every process a running background task started, a `setsid` grandchild
included.

Print mode. One task whose shell starts a tree of five processes: `sleep 60 & (sleep 60 &
sleep 60; wait) & setsid sleep 60 & wait`; once they run, one kill call. Answer yes when no
process of the task (found by a marker in its environment) is alive 3 s after the kill.
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
        (tid, _), = s.spawn(["sleep 60 & (sleep 60 & sleep 60; wait) & setsid sleep 60 & wait"])
        deadline = time.monotonic() + 10
        while sum(1 for p in s.procs() if "sleep 60" == p[2].strip()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        before = s.procs()
        err, text = s.kill([tid])[0]
        t = time.monotonic()
        while s.procs() and time.monotonic() - t < 3:
            time.sleep(0.02)
        left = s.procs()
        took = (time.monotonic() - t) * 1000
    finally:
        s.close()
    said = C.re.sub(r"\s+", " ", text)[:70]
    C.finish(a.version, (not err) and not left,
             f"{len(before)} processes before the kill ({sum(1 for p in before if p[2].strip() == 'sleep 60')} sleeps, "
             f"one under setsid); kill {'error' if err else 'ok'} {said!r}; "
             f"{'all gone after %.0f ms' % took if not left else '%d alive 3 s after: %s' % (len(left), [p[2][:40] for p in left])}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
