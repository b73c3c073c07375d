"""Claim (anthropics/claude-code#52786 "not reproduced: no task of any case or race was notified
twice"; #33872 in docs/claude-code.md): a background task whose output the model already
consumed is notified to the model at most once.

Print mode. One task `sleep 1; printf x; exit 0`. Where the version has an output tool, one
blocking read (`block: true`) right away, which returns once the task ended; without one
(2.1.277 on), the model would `Read` the file: this script reads the output file itself once
the task's shell exited. Then 5 s, one more prompt, 3 s. Answer yes when the task's
<task-notification> appears at most once in any request's conversation (any role, any block
type). The observed line says where it came (inside the read's result, in a message of its own
that cost the model a turn, or with the next prompt).
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def measure(version):
    """The measurement, shared with bg_33872.py: a dict with n (times notified), where, how, ..."""
    load = C.loadavg()
    s = C.BgSession(version)
    try:
        (tid, out), = s.spawn(["sleep 1; printf x; exit 0"])
        if s.output_tool:
            err, text = s.output(tid, block=True, timeout=60)
            said = C.re.sub(r"\s+", " ", text)[:80]
            how = f"{s.output_tool[0]} block=true answered {said!r}"
            inside = "<task-notification>" in text
        else:
            deadline = time.monotonic() + 10
            while not (out and os.path.exists(out) and "exited with code" in open(out).read()) and time.monotonic() < deadline:
                time.sleep(0.05)
            how = f"output file read: {open(out).read()!r}" if out and os.path.exists(out) else "no output file"
            inside = False
        n_read = s.ledger.per_id().get(tid, 0)
        time.sleep(5)
        before_prompt = s.ledger.per_id().get(tid, 0)
        s.ping()
        time.sleep(3)
        n = s.ledger.per_id().get(tid, 0)
        first = s.ledger.first_seen().get(tid)
        own_turn = False
        if first:
            for k, b in s.model.agent_bodies():
                if k == first[0]:
                    last = C.last_turn_message(b)
                    own_turn = bool(last) and any("<task-notification>" in t for _, t in C.message_texts(last)) \
                        and not any("repro step" in t for _, t in C.message_texts(last)) \
                        and not any(w == "tool_result" for w, _ in C.message_texts(last))
    finally:
        s.close()
    where = ("inside the read's result" if inside else
             ("in a request of its own (a model turn)" if own_turn else
              (f"{first[1]}/{first[2]} of request {first[0]}" if first else "never")))
    C.log(f"{how}; notified {n}x; first {first}; own turn {own_turn}")
    return {"n": n, "inside": inside, "own_turn": own_turn, "where": where,
            "summary": f"{how}; notified {n}x ({n_read} by the end of the read, {before_prompt} before the "
                       f"next prompt), first {where}; load {load}"}


def main():
    a = C.parse_args("2.1.112")
    C.install(a.version)
    r = measure(a.version)
    C.finish(a.version, r["n"] <= 1, r["summary"])


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.112"))
