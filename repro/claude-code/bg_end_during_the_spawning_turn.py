"""Claim: every one of 16 background tasks that exit during the turn that started them is
notified to the model exactly once (anthropics/claude-code#40235 for tasks that end at once).

One CLI per run, print mode. Step 1 (one turn) starts 16 `Bash` calls with
`run_in_background: true`, each `printf x` (exits at once, while the turn still runs). Then
10 s without any prompt, then one more prompt (a user would send the next one) and 5 s more.
A task is notified when a `<task-notification>` with its `<task-id>` is in any message of an
agent request (any role: user, system; string content, text blocks, tool_result contents);
"once" = the largest number of blocks for that id in one request's conversation is 1.
Answer yes when every run has 16 of 16 notified once. --runs N (default 3).
"""
import os, sys, time, collections
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C

N = 16


def one_run(version, k):
    load = C.loadavg()
    s = C.BgSession(version)
    try:
        t0 = time.monotonic()
        started = s.spawn(["printf x"] * N)
        turn = time.monotonic() - t0
        ids = [i for i, _ in started]
        per = s.wait_notified(ids, 10)
        before = {i for i in ids if per.get(i, 0) >= 1}
        s.ping()
        per = s.wait_notified(ids, 5)
        time.sleep(0.5)
        per = s.ledger.per_id()
        once = [i for i in ids if per.get(i, 0) == 1]
        never = [i for i in ids if per.get(i, 0) == 0]
        twice = [i for i in ids if per.get(i, 0) > 1]
        stream = {e.get("task_id") for e in s.stream_notes()}
        roles = collections.Counter(f"{r}/{w}" for i, (n, r, w, t) in s.ledger.first_seen().items() if i in ids)
        reqs = sorted({n for i, (n, r, w, t) in s.ledger.first_seen().items() if i in ids})
        C.log(f"run {k}: load {load}, spawn turn {turn:.2f} s; once {len(once)}, never {len(never)}, "
              f"twice {len(twice)}; {len(before)} before the next prompt; CLI stream reported "
              f"{len(stream & set(ids))}; first seen in {dict(roles)} in agent requests {reqs}; shrunk {s.ledger.shrunk}")
        return {"once": len(once), "never": len(never), "twice": len(twice), "before": len(before),
                "turn": turn, "load": load, "roles": dict(roles), "stream": len(stream & set(ids))}
    finally:
        s.close()


def main():
    a = C.parse_args("2.1.332", runs=3)
    C.install(a.version)
    res = [one_run(a.version, k + 1) for k in range(a.runs)]
    ok = all(r["once"] == N for r in res)
    roles = collections.Counter()
    for r in res:
        roles.update(r["roles"])
    obs = (f"notified once: {', '.join(str(r['once']) for r in res)} of {N} in {len(res)} runs "
           f"(never {', '.join(str(r['never']) for r in res)}; twice {sum(r['twice'] for r in res)}; "
           f"before the next prompt {', '.join(str(r['before']) for r in res)}); spawn turn "
           f"{', '.join('%.1f' % r['turn'] for r in res)} s; found as {dict(roles)}; load at start "
           f"{res[0]['load']}")
    C.finish(a.version, ok, obs)


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
