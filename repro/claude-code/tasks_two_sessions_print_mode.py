"""Claim (the print-mode side of docs/claude-code.md "What happens between requests": "In print
mode 2.1.112 and 2.1.330 never did it"; the scenarios nothing-vanishes-when-another-session-
completes-the-last-task and nothing-vanishes-while-another-session-adds-to-a-finished-list fail
in the terminal UI): with two print-mode sessions on one named list, nothing is deleted when
one session completes the list's last task, nor when a second session adds a pending task to a
finished list.

Case 1: sessions a and b on list `shared`; a creates and completes task 1; b creates task 2 and
completes it (the last one); 7 s idle. Case 2: a new list `plan`; a creates and completes task
1 (the list is finished); 6 s idle; b creates a pending task; 7 s idle. Answer yes when every
task file is still there at the end of both cases (the folders are looked at every 100 ms).
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def watch(s, names, seconds):
    t0 = time.monotonic()
    gone = None
    while time.monotonic() - t0 < seconds:
        have = s.files()
        if gone is None and not all(n in have for n in names):
            gone = time.monotonic() - t0
        time.sleep(0.1)
    return gone


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    root = C.temp_dir("repro-cc-root-")
    A = C.TaskSession(a.version, root, "shared")
    B = C.TaskSession(a.version, root, "shared")
    try:
        i1 = A.create("a's task")[2]
        A.call("TaskUpdate", {"taskId": i1, "status": "completed"})
        i2 = B.create("b's task")[2]
        B.call("TaskUpdate", {"taskId": i2, "status": "completed"})
        g1 = watch(A, [f"{i1}.json", f"{i2}.json"], 7)
        f1 = sorted(A.files())
    finally:
        A.close()
        B.close()
    A = C.TaskSession(a.version, root, "plan")
    B = C.TaskSession(a.version, root, "plan")
    try:
        j1 = A.create("finished")[2]
        A.call("TaskUpdate", {"taskId": j1, "status": "completed"})
        g2a = watch(A, [f"{j1}.json"], 6)
        j2 = B.create("added later")[2]
        g2 = watch(A, [f"{j1}.json", f"{j2}.json"], 7)
        f2 = sorted(A.files())
    finally:
        A.close()
        B.close()
    ok = g1 is None and g2a is None and g2 is None
    C.finish(a.version, ok,
             f"another session completed the last task: {'kept' if g1 is None else 'files gone at +%.1f s' % g1} "
             f"(files after 7 s {f1}); a second session added a pending task to a finished list 6 s after its "
             f"completion: {'kept' if g2a is None and g2 is None else 'files gone'} (files after 7 s more {f2}); load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
