#!/usr/bin/env python3
"""An example background-task runner speaking taskproof's background protocol.

One JSON request per line on stdin, one answer per line on stdout (docs/background.md, "The
protocol"). The session's folder is $TASKPROOF_ROOT; task outputs go to its tasks/ID.output.
Standard library only; a second, independent implementation of the contract (rules B1-B8),
to show the protocol can be served by something other than taskproof itself:

    taskproof run --suite background \
        --target 'bg-cmd:python3 examples/adapters/background/runner.py --output-cap 1048576'

Each task is `sh -c COMMAND` in a session (so a process group) of its own. The `notified`
latch is a test-and-set under a lock (Python has no compare-and-swap; the lock makes the
test and the set one step). A guardian process (this file with --guardian, in a group of its
own) kills every task group when this runner dies, however it dies: it reads `+PGID`/`-PGID`
lines from a pipe only this runner writes to, and acts on the pipe's end. Unlike taskproof's
reference, the parent writes `+PGID` just after the fork, so a SIGKILL in the microseconds
between the two would leave that one task behind.
"""

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
SEED_CAP = 5 * 1024 * 1024 * 1024
MAX_READ = 4 * 1024 * 1024
FINAL = ("completed", "failed", "killed")


def guardian():
    groups = set()
    for line in sys.stdin:
        line = line.strip()
        try:
            pgid = int(line[1:])
        except ValueError:
            continue
        if line.startswith("+"):
            groups.add(pgid)
        elif line.startswith("-"):
            groups.discard(pgid)
    for g in groups:
        if g > 1:
            try:
                os.killpg(g, signal.SIGKILL)
            except OSError:
                pass


class Task:
    def __init__(self, tid, path, command):
        self.id = tid
        self.path = path
        self.command = command
        self.status = "pending"
        self.exit_code = None
        self.summary = ""
        self.pgid = None
        self.reaped = False
        self.lock = threading.Lock()
        self.notified = False
        self.latch = threading.Lock()


class Runner:
    def __init__(self, root, cap):
        self.root = root
        self.tasks_dir = os.path.join(root, "tasks")
        os.makedirs(self.tasks_dir, exist_ok=True)
        self.cap = cap
        self.tasks = {}
        self.evicted = {}
        self.order = []
        self.notes = []
        self.pgids = []
        self.ended = False
        self.cond = threading.Condition()
        self.guardian = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--guardian"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        self.glock = threading.Lock()
        threading.Thread(target=self.watch_cap, daemon=True).start()

    def tell_guardian(self, text):
        with self.glock:
            try:
                self.guardian.stdin.write(text.encode())
                self.guardian.stdin.flush()
            except OSError:
                pass

    def spawn(self, command, hold):
        for _ in range(16):
            tid = "b" + "".join(secrets.choice(ALPHABET) for _ in range(8))
            path = os.path.join(self.tasks_dir, tid + ".output")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW, 0o644)
                break
            except FileExistsError:
                continue
        else:
            raise RuntimeError("no free task id")
        os.close(fd)
        task = Task(tid, path, command)
        with self.cond:
            self.tasks[tid] = task
            self.order.append(tid)
        if not hold:
            with task.lock:
                self.start_locked(task)
        return task

    def start_locked(self, task):
        fd = os.open(task.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        try:
            proc = subprocess.Popen(["sh", "-c", task.command], stdin=subprocess.DEVNULL,
                                    stdout=fd, stderr=fd, cwd=self.root, start_new_session=True)
        finally:
            os.close(fd)
        self.tell_guardian("+%d\n" % proc.pid)
        task.pgid = proc.pid
        task.status = "running"
        with self.cond:
            self.pgids.append(proc.pid)
        threading.Thread(target=self.wait_for, args=(task, proc), daemon=True).start()

    def wait_for(self, task, proc):
        while True:
            try:
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                break
        with task.lock:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            code = proc.wait()
            task.reaped = True
            self.tell_guardian("-%d\n" % proc.pid)
            if task.status not in FINAL:
                if code == 0:
                    task.status, task.exit_code, task.summary = "completed", 0, "exit code 0"
                elif code > 0:
                    task.status, task.exit_code, task.summary = "failed", code, "exit code %d" % code
                else:
                    task.status, task.exit_code, task.summary = "failed", None, "ended by signal %d" % -code
        self.finish(task)

    def finish(self, task):
        with task.latch:
            if task.notified:
                return
            task.notified = True
        with task.lock:
            status, code, summary = task.status, task.exit_code, task.summary
        raw = ("<task-notification>\n<task-id>%s</task-id>\n<output-file>%s</output-file>\n"
               "<status>%s</status>\n<summary>Background command %s: %s</summary>\n</task-notification>"
               % (task.id, task.path, status, status, summary))
        with self.cond:
            self.notes.append({"id": task.id, "status": status, "exit_code": code,
                               "output_file": task.path, "raw": raw})
            self.cond.notify_all()

    def stop(self, task, status, summary):
        with task.lock:
            if task.status in FINAL:
                return task.status
            if task.pgid is not None and not task.reaped:
                try:
                    os.killpg(task.pgid, signal.SIGKILL)
                except OSError:
                    pass
            task.status, task.exit_code, task.summary = status, None, summary
        self.finish(task)
        return None

    def watch_cap(self):
        while not self.ended:
            time.sleep(0.02)
            with self.cond:
                tasks = list(self.tasks.values())
            for t in tasks:
                if t.status != "running":
                    continue
                try:
                    size = os.path.getsize(t.path)
                except OSError:
                    continue
                if size > self.cap and self.stop(t, "failed", "output exceeded the cap of %d bytes" % self.cap) is None:
                    fd = os.open(t.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
                    try:
                        os.ftruncate(fd, self.cap)
                        os.write(fd, b"\n[output truncated: over the cap]\n")
                    finally:
                        os.close(fd)

    def find(self, tid):
        with self.cond:
            return self.tasks.get(tid), self.evicted.get(tid)

    def notifications(self, within_ms):
        deadline = time.monotonic() + within_ms / 1000.0
        with self.cond:
            while not self.ended:
                have = {n["id"] for n in self.notes}
                if all(i in have for i in self.order):
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            out = list(self.notes)
            have = {n["id"] for n in out}
            for tid in list(self.tasks):
                t = self.tasks[tid]
                if tid in have and t.status in FINAL and (t.reaped or t.pgid is None):
                    self.evicted[tid] = (t.status, t.path)
                    del self.tasks[tid]
            return out

    def end(self):
        with self.cond:
            self.ended = True
            tasks = list(self.tasks.values())
        for t in tasks:
            self.stop(t, "killed", "killed when the session ended")
        with self.cond:
            self.cond.notify_all()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(t.pgid is not None and not t.reaped for t in tasks):
            time.sleep(0.01)
        try:
            self.guardian.stdin.close()
            self.guardian.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def handle(self, req):
        op = req.get("op")
        if op == "hello":
            return {"ok": True, "protocol": 1, "kind": "background", "name": "python-example-runner",
                    "version": "1", "output_cap": self.cap, "features": ["hold"]}
        if op == "spawn":
            if not isinstance(req.get("command"), str):
                return {"ok": False, "error": "invalid", "message": "spawn: \"command\" must be a string"}
            t = self.spawn(req["command"], bool(req.get("hold")))
            return {"ok": True, "id": t.id, "output_file": t.path}
        if op == "notifications":
            ms = req.get("within_ms")
            if not isinstance(ms, int) or ms < 0:
                return {"ok": False, "error": "invalid", "message": "\"within_ms\" must be a whole number"}
            return {"ok": True, "notifications": self.notifications(ms)}
        if op == "task_pids":
            with self.cond:
                return {"ok": True, "pids": list(self.pgids)}
        if op == "end":
            self.end()
            return {"ok": True}
        tid = req.get("id")
        if not isinstance(tid, str):
            return {"ok": False, "error": "invalid", "message": "\"id\" must be a string"}
        task, tomb = self.find(tid)
        if op == "kill":
            if task is None and tomb is None:
                return {"ok": True, "result": "not_found", "message": "No task found with ID: " + tid}
            if task is None:
                return {"ok": True, "result": "already_final", "status": tomb[0]}
            was = self.stop(task, "killed", "killed on request")
            if was is None:
                return {"ok": True, "result": "killed"}
            return {"ok": True, "result": "already_final", "status": was}
        if op == "start":
            if task is None or task.status != "pending":
                return {"ok": False, "error": "not_found", "message": "No pending task with ID: " + tid}
            with task.lock:
                if task.status == "pending":
                    self.start_locked(task)
            return {"ok": True}
        if op == "output":
            offset = req.get("offset")
            if not isinstance(offset, int) or offset < 0:
                return {"ok": False, "error": "invalid", "message": "\"offset\" must be a whole number"}
            if task is None and tomb is None:
                return {"ok": False, "error": "not_found", "message": "No task found with ID: " + tid}
            status, path = (task.status, task.path) if task else tomb
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                os.lseek(fd, offset, os.SEEK_SET)
                data = os.read(fd, MAX_READ)
            finally:
                os.close(fd)
            return {"ok": True, "text": data.decode("utf-8", "replace"),
                    "next_offset": offset + len(data), "status": status}
        return {"ok": False, "error": "invalid", "message": "unknown op %r" % op}


def main(argv):
    if "--guardian" in argv:
        guardian()
        return 0
    cap = SEED_CAP
    if "--output-cap" in argv:
        cap = int(argv[argv.index("--output-cap") + 1])
    root = os.environ.get("TASKPROOF_ROOT")
    if not root:
        print("TASKPROOF_ROOT is not set", file=sys.stderr)
        return 2
    runner = Runner(root, cap)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = None
        try:
            req = json.loads(line)
            answer = runner.handle(req) if isinstance(req, dict) else {
                "ok": False, "error": "invalid", "message": "a request is a JSON object"}
        except ValueError as e:
            answer = {"ok": False, "error": "invalid", "message": "not JSON: %s" % e}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        if isinstance(req, dict) and req.get("op") == "end":
            return 0
    runner.end()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
