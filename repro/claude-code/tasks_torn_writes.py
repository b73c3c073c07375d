"""Claim (timeline "torn writes end", 2.1.112 -> 2.1.113: "a raw reader found a task file half
written during the race `metadata` (4 writers x 5 ops)"): while four CLI processes update one
task's metadata at once, a reader of the task's file sometimes finds it half written (empty or
not parseable JSON).

Print mode: four CLIs on one named list over one shared folder; task 1 created first; then the
four each send 5 TaskUpdate {taskId: 1, metadata: {wN: k}} turns, all four at once (threads),
while this script reads ROOT/race/1.json in a loop and parses it. Answer yes when some read did
not parse, in at least one of --runs (default 3) runs (the loop stops at the first run that
saw one); no when none did in any run.
"""
import json, os, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def one_run(version, k):
    load = C.loadavg()
    root = C.temp_dir("repro-cc-root-")
    ss = [C.TaskSession(version, root, "race") for _ in range(4)]
    try:
        err, text, tid = ss[0].create("shared")
        path = root / "race" / f"{tid}.json"
        stop = threading.Event()
        stats = {"reads": 0, "bad": 0, "empty": 0, "example": None}

        def reader():
            while not stop.is_set():
                try:
                    data = path.read_bytes()
                except FileNotFoundError:
                    continue
                stats["reads"] += 1
                try:
                    json.loads(data)
                except ValueError:
                    stats["bad"] += 1
                    stats["empty"] += (len(data) == 0)
                    if stats["example"] is None:
                        stats["example"] = f"{len(data)} bytes: {data[:300]!r}"

        answers = []

        def writer(w, s):
            for i in range(5):
                answers.append(s.call("TaskUpdate", {"taskId": tid, "metadata": {f"w{w}": i}}, timeout=120))

        r = threading.Thread(target=reader, daemon=True)
        r.start()
        t0 = time.monotonic()
        ws = [threading.Thread(target=writer, args=(w, s)) for w, s in enumerate(ss)]
        for w in ws:
            w.start()
        for w in ws:
            w.join()
        took = time.monotonic() - t0
        stop.set()
        r.join()
        final = json.loads(path.read_text())
        C.log(f"run {k}: load {load}; {len(answers)} updates ({sum(1 for e, _ in answers if e)} errors) in {took:.1f} s; "
              f"{stats['reads']} raw reads, {stats['bad']} not parseable ({stats['empty']} empty), e.g. {stats['example']}; "
              f"final metadata {final.get('metadata')}")
        return dict(stats, took=took, load=load)
    finally:
        for s in ss:
            s.close()


def main():
    a = C.parse_args("2.1.112", runs=3)
    C.install(a.version)
    res = []
    for k in range(a.runs):
        res.append(one_run(a.version, k + 1))
        if res[-1]["bad"]:
            break
    seen = any(r["bad"] for r in res)
    C.finish(a.version, seen, "; ".join(f"run {i + 1}: {r['bad']} of {r['reads']} raw reads not parseable "
                                         f"({r['empty']} empty{'; first: ' + r['example'][:60] if r['example'] else ''}), "
                                         f"20 updates in {r['took']:.1f} s, load {r['load']}"
                                         for i, r in enumerate(res)))


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.112"))
