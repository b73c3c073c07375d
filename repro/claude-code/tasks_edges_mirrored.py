"""Claim (timeline "edges mirrored from either side": none seen, 2.1.17..2.1.332 pass; probe
cc-edges-are-mirrored): an edge added from either side (TaskUpdate addBlocks on the blocker, or
addBlockedBy on the blocked task) is written into both tasks' files.

Print mode, one named list. Tasks 1, 2, 3, 4. TaskUpdate {taskId: 1, addBlocks: [2]}, then
{taskId: 4, addBlockedBy: [3]}. Answer yes when 1.json blocks [2] and 2.json blockedBy [1], and
3.json blocks [4] and 4.json blockedBy [3].
"""
import os, sys, json
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    root = C.temp_dir("repro-cc-root-")
    s = C.TaskSession(a.version, root, "l")
    try:
        ids = [s.create(x)[2] for x in ("one", "two", "three", "four")]
        r1 = s.call("TaskUpdate", {"taskId": ids[0], "addBlocks": [ids[1]]})
        r2 = s.call("TaskUpdate", {"taskId": ids[3], "addBlockedBy": [ids[2]]})
        f = {k: json.loads(v) for k, v in s.files().items() if k.endswith(".json")}
    finally:
        s.close()
    g = lambda i, k: f.get(f"{i}.json", {}).get(k)
    seen = {i: (g(i, "blocks"), g(i, "blockedBy")) for i in ids}
    ok = (ids[1] in (g(ids[0], "blocks") or []) and ids[0] in (g(ids[1], "blockedBy") or [])
          and ids[3] in (g(ids[2], "blocks") or []) and ids[2] in (g(ids[3], "blockedBy") or []))
    C.finish(a.version, ok, f"(blocks, blockedBy) per task after 1 addBlocks [2] and 4 addBlockedBy [3]: {seen}; "
             f"answers {r1[1][:40]!r} / {r2[1][:40]!r}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
