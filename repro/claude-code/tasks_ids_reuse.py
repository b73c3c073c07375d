"""Claim (timeline "ids stop being reused after delete and restart", 2.1.20 fails, 2.1.21 on
pass; 2.1.20: `steps[10]: task.id: expected "5", got "1"`): a deleted task's id is never handed
out again, also after every task was deleted and the CLI restarted.

Print mode, one named list. Create 1, 2, 3; delete 3; create (expect 4); delete 1, 2 and the
fourth; restart the CLI; create (expect 5). Answer yes when no id was handed out twice (the
fourth create is not 3 and the last create is none of 1-4).
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def main():
    a = C.parse_args("2.1.21")
    C.install(a.version)
    load = C.loadavg()
    root = C.temp_dir("repro-cc-root-")
    s = C.TaskSession(a.version, root, "l")
    ids = []
    try:
        for subj in ("one", "two", "three"):
            ids.append(s.create(subj)[2])
        e, t = s.call("TaskUpdate", {"taskId": ids[2], "status": "deleted"})
        if e:
            raise C.CouldNotRun(f"no delete: {t[:200]!r}")
        ids.append(s.create("four")[2])
        for i in (ids[0], ids[1], ids[3]):
            s.call("TaskUpdate", {"taskId": i, "status": "deleted"})
        left = sorted(s.files())
        s.restart()
        ids.append(s.create("five")[2])
    finally:
        s.close()
    ok = None not in ids and len(set(ids)) == len(ids)
    C.finish(a.version, ok, f"ids handed out in order: {ids} (after deleting all and a restart; files before the "
             f"restart {left}); load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.21"))
