"""Claim (docs/background.md "Killed tasks are not notified ... on any version"; docs/claude-code.md
"a task killed with TaskStop/KillShell is never notified to the model, on every version"): a
running background task killed with the version's kill tool is never notified to the model.

Print mode. One task `sleep 30 & sleep 30; wait` (a shell with children); once its processes
run, one kill call; then 5 s, one more prompt, 3 s. Notifications are looked for in every
message of every agent request (any role, any block type). Answer yes when the kill answered
success and no <task-notification> for the task ever reached the model, in every run
(--runs, default 2). The observed line also says whether the task's processes were gone.
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def one_run(version, k):
    load = C.loadavg()
    s = C.BgSession(version)
    try:
        (tid, out), = s.spawn(["sleep 30 & sleep 30; wait"])
        deadline = time.monotonic() + 10
        while len(s.procs()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        before = len(s.procs())
        (err, text), = s.kill([tid])
        t = time.monotonic()
        while s.procs() and time.monotonic() - t < 5:
            time.sleep(0.02)
        gone_ms = (time.monotonic() - t) * 1000 if not s.procs() else None
        time.sleep(max(0, 5 - (time.monotonic() - t)))
        s.ping()
        time.sleep(3)
        n = s.ledger.per_id().get(tid, 0)
        stream = [e.get("status") for e in s.stream_notes() if e.get("task_id") == tid]
        C.log(f"run {k}: load {load}; {before} processes; kill answered error={err} {text[:120]!r}; processes gone "
              f"after {gone_ms} ms; notified {n}x; CLI stream {stream}")
        return {"ok": (not err) and n == 0, "n": n, "err": err, "text": text[:70], "gone": gone_ms,
                "stream": stream, "load": load}
    finally:
        s.close()


def main():
    a = C.parse_args("2.1.332", runs=2)
    C.install(a.version)
    res = [one_run(a.version, k + 1) for k in range(a.runs)]
    obs = "; ".join(f"run {i + 1}: kill {'error' if r['err'] else 'ok'} {r['text']!r}, processes gone after "
                    f"{'%.0f ms' % r['gone'] if r['gone'] is not None else 'never (5 s)'}, notified {r['n']}x, "
                    f"CLI stream {r['stream']}, load {r['load']}" for i, r in enumerate(res))
    C.finish(a.version, all(r["ok"] for r in res), obs)


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
