"""Claim (docs/background.md, docs/claude-code.md "The kill/complete race"): in a race of 100
background tasks killed in one turn while they complete, every task whose kill found it already
completed is still notified to the model once (published: 2.1.112 yes; 2.1.332 no, "32 of 100
completed tasks never notified"). The killed ones are reported too (published: never notified).

100 tasks start in one turn; each touches a ready file and waits at a gate (`flock -s` on a
file this script holds with LOCK_EX). Once all 100 wait, the gate opens and at once the kill
step is prompted (the model answers with 100 kill calls, shuffled); each task then sleeps its own delay (0-396 ms in 4 ms steps, shuffled; REPRO_RACE_STEP_MS changes the step) and exits 0. Then 10 s of
waiting, one more prompt, 3 s. Notifications are counted in every message of every agent
request, any role (see lib/claude.py NotificationLedger).
Answer: yes when every task whose kill did not answer "killed" is notified exactly once, in
every run (--runs, default 3).
"""
import fcntl, os, random, sys, time, collections, re
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C

N = 100
STEP_MS = int(os.environ.get("REPRO_RACE_STEP_MS", "4"))


def classify(is_error, text):
    t = text.lower()
    if "no task found" in t or "no shell found" in t or "not found" in t:
        return "not found"
    if "not running" in t or "already" in t or "status: completed" in t:
        return "already completed"
    if not is_error and ("stop" in t or "kill" in t):
        return "killed"
    return "other: " + text[:80]


def one_run(version, k):
    load0 = C.loadavg()
    s = C.BgSession(version, turn_timeout=120)
    gate_dir = C.temp_dir("repro-cc-race-")
    gate = gate_dir / "gate"
    gate.write_text("")
    (gate_dir / "ready").mkdir()
    lock = open(gate, "r+")
    fcntl.flock(lock, fcntl.LOCK_EX)
    delays = [STEP_MS * i for i in range(N)]
    random.shuffle(delays)
    try:
        cmds = [f"touch {gate_dir}/ready/{i}; flock -s {gate} true; sleep {d / 1000:.3f}; exit 0"
                for i, d in enumerate(delays)]
        t0 = time.monotonic()
        started = s.spawn(cmds, timeout=180)
        spawn_t = time.monotonic() - t0
        ids = [i for i, _ in started]
        deadline = time.monotonic() + 60
        while len(os.listdir(gate_dir / "ready")) < N:
            if time.monotonic() > deadline:
                raise C.CouldNotRun(f"only {len(os.listdir(gate_dir / 'ready'))} of {N} tasks reached the gate")
            time.sleep(0.05)
        opened = {}

        def open_gate(step):
            opened["t"] = time.monotonic()
            fcntl.flock(lock, fcntl.LOCK_UN)

        open_gate(0)
        order = list(range(N))
        random.shuffle(order)
        t1 = time.monotonic()
        answers = s.kill([ids[i] for i in order], timeout=180)
        kill_t = time.monotonic() - t1
        kill_of = {}
        samples = {}
        for i, (err, text) in zip(order, answers):
            c = classify(err, text)
            kill_of[ids[i]] = c
            samples.setdefault(c, text[:160])
        s.wait_notified([i for i in ids if kill_of[i] != "killed"], 10)
        s.ping(timeout=120)
        time.sleep(3)
        per = s.ledger.per_id()
        first = s.ledger.first_seen()
        tally = collections.Counter()
        for i in ids:
            tally[(kill_of[i], per.get(i, 0))] += 1
        roles = collections.Counter(f"{first[i][1]}/{first[i][2]}" for i in ids if i in first)
        alive = s.procs()
        stream = collections.Counter(e.get("status") for e in s.stream_notes() if e.get("task_id") in ids)
        C.log(f"run {k}: load {load0} -> {C.loadavg()}; spawn turn {spawn_t:.1f} s, kill turn {kill_t:.1f} s")
        by_delay = sorted((delays[i], kill_of[ids[i]][:6]) for i in range(N))
        C.log(f"run {k}: delay ms -> kill answer: {by_delay}")
        C.log(f"run {k}: kill answers {collections.Counter(kill_of.values())}; samples {samples}")
        C.log(f"run {k}: (kill answer, times notified) -> count: {dict(tally)}; first seen as {dict(roles)}; "
              f"CLI stream statuses {dict(stream)}; processes alive {len(alive)}; shrunk {s.ledger.shrunk}")
        bad = [i for i in ids if kill_of[i] != "killed" and per.get(i, 0) != 1]
        return {"ok": not bad, "kills": collections.Counter(kill_of.values()), "tally": tally, "load": load0,
                "killed_notified": sum(1 for i in ids if kill_of[i] == "killed" and per.get(i, 0) > 0),
                "roles": roles, "alive": len(alive), "spawn": spawn_t, "kill": kill_t}
    finally:
        try:
            fcntl.flock(lock, fcntl.LOCK_UN)
        except OSError:
            pass
        s.close()


def main():
    a = C.parse_args("2.1.332", runs=3)
    C.install(a.version)
    res = [one_run(a.version, k + 1) for k in range(a.runs)]
    parts = []
    for r in res:
        done = collections.Counter()
        for (kind, n), c in r["tally"].items():
            if kind != "killed":
                done[n] += c
        done = dict(done)
        parts.append(f"kills {dict(r['kills'])}; not-killed tasks by times notified {done}; killed tasks notified "
                     f"{r['killed_notified']}; first seen as {dict(r['roles'])}; alive after {r['alive']}; "
                     f"turns {r['spawn']:.1f}/{r['kill']:.1f} s; load {r['load']}")
    C.finish(a.version, all(r["ok"] for r in res), " | ".join(parts))


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
