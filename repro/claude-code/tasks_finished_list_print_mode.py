"""Claim (docs/claude-code.md "What happens between requests": "In print mode 2.1.112 and 2.1.330
never did it; 2.1.20 and 2.1.21 did it in print mode too, when a loaded machine let 5 s pass
between two requests"; the print-mode side of nothing-vanishes-finished-list-left-idle): in
print mode, a named list whose tasks are all completed is kept when the session is left idle
for 7 s after the last completion.

Print mode, one CLI on a named list: create two tasks, complete both (the second in its own
turn), then 7 s with no request; the list folder is looked at every 100 ms. Answer yes when
both task files are still there after the 7 s. The observed line also gives the result of a
second session on a new list where the turn that completes the last task is held open by the
scripted model for 7 s (the tool_result's answer is delayed): whether the files vanished while
a turn was running.
"""
import os, sys, time, threading
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def watch(s, seconds):
    gone_at = None
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        names = [n for n in s.files() if n.endswith(".json")]
        if len(names) < 2 and gone_at is None:
            gone_at = time.monotonic() - t0
        time.sleep(0.1)
    return gone_at, sorted(s.files())


def main():
    a = C.parse_args("2.1.332")
    C.install(a.version)
    load = C.loadavg()
    root = C.temp_dir("repro-cc-root-")
    s = C.TaskSession(a.version, root, "plan")
    try:
        ids = [s.create(x)[2] for x in ("one", "two")]
        s.call("TaskUpdate", {"taskId": ids[0], "status": "completed"})
        s.call("TaskUpdate", {"taskId": ids[1], "status": "completed"})
        gone_idle, after_idle = watch(s, 7)
    finally:
        s.close()
    # the same with the completing turn held open for 7 s
    s = C.TaskSession(a.version, root, "plan2")
    try:
        ids2 = [s.create(x)[2] for x in ("one", "two")]
        s.call("TaskUpdate", {"taskId": ids2[0], "status": "completed"})
        orig = s.script.agent
        hold = {"on": True}

        def slow_agent(body, n):
            last = C.last_turn_message(body) or {}
            if hold["on"] and any(w == "tool_result" for w, _ in C.message_texts(last)):
                hold["on"] = False
                time.sleep(7)
            return orig(body, n)

        s.model.agent = slow_agent
        out = {}
        th = threading.Thread(target=lambda: out.update(r=s.call("TaskUpdate", {"taskId": ids2[1], "status": "completed"}, timeout=60)))
        th.start()
        gone_open, after_open = watch(s, 7.5)
        th.join()
        after_turn = sorted(s.files())
    finally:
        s.close()
    kept = all(f"{i}.json" in after_idle for i in ids)
    C.log(f"idle: gone at {gone_idle}, files {after_idle}; turn held open: gone at {gone_open}, files {after_open}, after the turn {after_turn}")
    C.finish(a.version, kept,
             f"left idle 7 s after the last completion: {'kept' if kept else 'deleted'} (files {after_idle}"
             f"{'' if gone_idle is None else ', gone at +%.1f s' % gone_idle}); with the completing turn held open 7 s: "
             f"{'kept' if gone_open is None else 'deleted at +%.1f s' % gone_open} (files then {after_open}); load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
