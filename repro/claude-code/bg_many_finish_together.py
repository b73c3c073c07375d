"""Claim (anthropics/claude-code#40235 "not reproduced" for tasks ending together, docs/claude-code.md;
the suite's many-finish-together, published as failing B2 on 2.1.332 and passing on 2.1.112):
12 background tasks that finish within milliseconds of each other (each `sleep 0.5; printf x`,
started in one turn) are each notified to the model exactly once.

Print mode; 10 s without prompts, one more prompt, 3 s. Notifications are looked for in every
message of every agent request (any role, any block type), once = at most one block per id in
any one request's conversation. Answer yes when 12 of 12 are notified once in every run
(--runs, default 3).
"""
import os, sys, time, collections
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C

N = 12


def one_run(version, k):
    load = C.loadavg()
    s = C.BgSession(version)
    try:
        t0 = time.monotonic()
        ids = [i for i, _ in s.spawn(["sleep 0.5; printf x"] * N)]
        turn = time.monotonic() - t0
        s.wait_notified(ids, 10)
        s.ping()
        s.wait_notified(ids, 3)
        time.sleep(0.5)
        per = s.ledger.per_id()
        first = s.ledger.first_seen()
        once = sum(1 for i in ids if per.get(i, 0) == 1)
        twice = sum(1 for i in ids if per.get(i, 0) > 1)
        roles = collections.Counter(f"{first[i][1]}/{first[i][2]}" for i in ids if i in first)
        C.log(f"run {k}: load {load}; spawn turn {turn:.2f} s; once {once}, twice {twice}, first seen as {dict(roles)}")
        return {"once": once, "twice": twice, "roles": roles, "turn": turn, "load": load}
    finally:
        s.close()


def main():
    a = C.parse_args("2.1.332", runs=3)
    C.install(a.version)
    res = [one_run(a.version, k + 1) for k in range(a.runs)]
    roles = collections.Counter()
    for r in res:
        roles.update(r["roles"])
    C.finish(a.version, all(r["once"] == N for r in res),
             f"notified once: {', '.join(str(r['once']) for r in res)} of {N} in {len(res)} runs, twice "
             f"{sum(r['twice'] for r in res)}; spawn turn {', '.join('%.1f' % r['turn'] for r in res)} s; "
             f"found as {dict(roles)}; load at start {res[0]['load']}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
