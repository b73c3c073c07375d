"""Claim (timeline "duplicate ids from two processes end", 2.1.20 -> 2.1.21; 2.1.20:
`steps[4]: task.id: expected "3", got "2"`): two CLI processes started together on one named
list and creating in turn (a, b, a, b, then b, a) get different ids.

Print mode: two CLIs, each with its own config folder whose `tasks` links to one shared folder,
both on the list `l`; both started before the first create. Answer yes when the six ids are
all different (and six task files exist).
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def main():
    a = C.parse_args("2.1.21")
    C.install(a.version)
    load = C.loadavg()
    root = C.temp_dir("repro-cc-root-")
    A = C.TaskSession(a.version, root, "l")
    B = C.TaskSession(a.version, root, "l")
    got = []
    try:
        for who, subj in ((A, "a1"), (B, "b1"), (A, "a2"), (B, "b2"), (B, "b3"), (A, "a3")):
            got.append((subj, who.create(subj)[2]))
        files = sorted(A.files())
    finally:
        A.close()
        B.close()
    ids = [i for _, i in got]
    ok = None not in ids and len(set(ids)) == 6
    C.finish(a.version, ok, f"ids {', '.join(f'{s}={i}' for s, i in got)}; task files {[f for f in files if f.endswith('.json')]}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.21"))
