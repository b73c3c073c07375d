"""Claim (timeline "background tasks notified to the model", 2.1.40 -> 2.1.41; docs/background.md
"Notifications reach the model from 2.1.41 on; 2.1.17-2.1.40 never put one into the model's
conversation in print mode"): a background task that exits 0 is notified to the model exactly
once, with status completed.

Print mode. One `Bash` call with run_in_background (`sleep 0.3; printf x; exit 0`), then 10 s
without prompts, one more prompt, 5 s. The notification is looked for in every message of
every agent request, any role and block type. Answer yes when, in each of --runs (default 2)
runs, the task's <task-notification> (status completed) is in the conversation exactly once.
"""
import os, sys, time, collections
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def one_run(version, k):
    load = C.loadavg()
    s = C.BgSession(version)
    try:
        (tid, out), = s.spawn(["sleep 0.3; printf x; exit 0"])
        s.wait_notified([tid], 10)
        before = s.ledger.per_id().get(tid, 0)
        s.ping()
        s.wait_notified([tid], 5)
        time.sleep(0.5)
        n = s.ledger.per_id().get(tid, 0)
        st = sorted(s.ledger.statuses.get(tid, ()))
        where = s.ledger.first_seen().get(tid)
        stream = [e.get("status") for e in s.stream_notes() if e.get("task_id") == tid]
        # what older versions say instead: reminders about background work
        rem = set()
        for _, b in s.model.agent_bodies():
            for m in b.get("messages") or []:
                for w, t in C.message_texts(m):
                    if "Background Bash" in t or "background" in t.lower() and "status:" in t:
                        rem.add(t[:100])
        C.log(f"run {k}: load {load}; {tid}: in the model's conversation {n}x (before the next prompt {before}), "
              f"statuses {st}, first seen {where and where[:3]}; CLI stream {stream}; tools {s.output_tool} {s.kill_tool}")
        return {"n": n, "st": st, "where": where and f"{where[1]}/{where[2]} of request {where[0]}",
                "stream": stream, "load": load}
    finally:
        s.close()


def main():
    a = C.parse_args("2.1.41", runs=2)
    C.install(a.version)
    res = [one_run(a.version, k + 1) for k in range(a.runs)]
    ok = all(r["n"] == 1 and r["st"] == ["completed"] for r in res)
    obs = "; ".join(f"run {i + 1}: notified {r['n']}x {r['st']} ({r['where']}), CLI stream said {r['stream']}, load {r['load']}"
                    for i, r in enumerate(res))
    C.finish(a.version, ok, obs)


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.41"))
