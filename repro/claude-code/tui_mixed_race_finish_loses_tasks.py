"""Claim (docs/claude-code.md, "What happens between requests", row "mixed race finish,
reference + Claude Code, 7 s settle": 4 of 4 tasks lost, all charged to Claude Code, files gone
at about +5 s; docs/race.md, "settle"): when another, well-behaved writer and a Claude Code
terminal-UI session work on one named list (CLAUDE_CODE_TASK_LIST_ID) and between them complete
every task, Claude Code deletes every task file of the list about 5 s after the last
completion, those the other writer created and completed too, with no request in flight.

Not taskproof's harness: this script is the other writer. It writes Claude Code's files the way
a careful store would: Claude Code's own lock directories (`.lock.lock` around a create,
`N.json.lock` around a task's write, as proper-lockfile makes them), the new content to a
temporary name, then rename(2) into place; it never deletes anything.

One run: a terminal UI (pseudo-terminal, scripted model, CLAUDE_CODE_TASK_LIST_ID=race) is
started; the writer creates tasks 1-4 ("task 0".."task 3", pending: taskproof's `finish`
workload with 2 writers x 2 ops); then the writer completes its share (1, 2) and Claude Code
its own (3, 4: TaskUpdate, one turn each), in one of two orders:
  cc-last:     the writer completes 1 and 2 (50 ms apart) while Claude Code's first turn runs,
               so Claude Code's completion of 4 is the last one (the order of taskproof's race,
               whose in-process reference answers in milliseconds and Claude Code in ~1 s);
  writer-last: Claude Code completes 3 and 4 first, then the writer completes 1 and 2, so the
               last completion is the other writer's (measured too, not published).
The list folder is then watched every 50 ms for 7 s from the last completion's write (the
newest mtime of the four files). --runs N (default 2) runs N of each order, each on a new folder
and a new UI.

Answer yes when, in every cc-last run, every Claude Code call answered success and all four
task files are gone 7 s after the last completion (the writer's two included). The observed
line gives, per run, when each file vanished, the writer's files among them, the
.highwatermark (its content and mtime relative to the vanishing: Claude Code's reset writes
it; 2.1.17 writes none) and the writer-last runs' outcome.
"""
import json, os, re, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C
import tui

SUCCESS = re.compile(r"Updated task #\d+")


class Writer:
    """A second writer of the list folder that honours Claude Code's lock directories and
    writes every file through a temporary name and rename(2)."""

    def __init__(self, folder):
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        lock = folder / ".lock"
        if not lock.exists():
            fd = os.open(lock, os.O_CREAT | os.O_WRONLY, 0o644)
            os.close(fd)
        self.n = 0
        self.acks = []  # (task id, action, time.time_ns() after the rename)

    def _lock(self, name, patience=12.0):
        path = self.folder / (name + ".lock")
        t0 = time.monotonic()
        wait = 0.005
        while True:
            try:
                os.mkdir(path)
                return path
            except FileExistsError:
                if time.monotonic() - t0 > patience:
                    raise C.CouldNotRun(f"the writer could not take {path.name} in {patience} s")
                time.sleep(wait)
                wait = min(wait * 2, 0.1)

    def _write(self, name, task):
        self.n += 1
        tmp = self.folder / f".{name}.tmp.{os.getpid()}.{self.n}"
        with open(tmp, "w") as f:
            f.write(json.dumps(task, indent=2))
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, self.folder / name)

    def create(self, subject):
        held = self._lock(".lock")
        try:
            ids = [int(n[:-5]) for n in os.listdir(self.folder) if re.fullmatch(r"\d+\.json", n)]
            try:
                ids.append(int((self.folder / ".highwatermark").read_text().strip() or 0))
            except (OSError, ValueError):
                pass
            tid = str(max(ids, default=0) + 1)
            task = {"id": tid, "subject": subject, "description": "", "status": "pending",
                    "blocks": [], "blockedBy": []}
            tl = self._lock(tid + ".json")
            try:
                self._write(tid + ".json", task)
            finally:
                os.rmdir(tl)
        finally:
            os.rmdir(held)
        self.acks.append((tid, "create", time.time_ns()))
        return tid

    def complete(self, tid):
        tl = self._lock(tid + ".json")
        try:
            task = json.loads((self.folder / f"{tid}.json").read_text())
            task["status"] = "completed"
            self._write(tid + ".json", task)
        finally:
            os.rmdir(tl)
        self.acks.append((tid, "complete", time.time_ns()))


def one_run(version, k, order):
    s = tui.TaskUi(version, C.temp_dir(f"repro-cc-mixed-{order}-{k}-"), task_list="race")
    folder = s.tasks / "race"
    try:
        s.start()
        w = Writer(folder)
        for i in range(4):
            w.create(f"task {i}")
        errors = []

        def writer_share(delay):
            try:
                time.sleep(delay)
                w.complete("1")
                time.sleep(0.05)
                w.complete("2")
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        results = []
        if order == "cc-last":
            th = threading.Thread(target=writer_share, args=(0.05,), daemon=True)
            th.start()
            for tid in ("3", "4"):
                results.append(s.turn([("TaskUpdate", {"taskId": tid, "status": "completed"})])[0])
            th.join(15)
        else:
            for tid in ("3", "4"):
                results.append(s.turn([("TaskUpdate", {"taskId": tid, "status": "completed"})])[0])
            writer_share(0.0)
        if errors:
            raise C.CouldNotRun(f"the writer failed: {errors[0]}")
        C.log(f"{order} run {k}: Claude Code:", results, "writer:", [(t, a) for t, a, _ in w.acks])
        all_ok = all(not err and SUCCESS.search(text) for err, text in results)
        before = {n: json.loads((folder / n).read_text()).get("status") for n in tui.task_files(folder)}
        mtimes = {n: os.stat(folder / n).st_mtime_ns for n in before}
        last_ns = max(mtimes.values())
        newest = max(mtimes, key=mtimes.get)
        last_by = f"{'the writer' if newest in ('1.json', '2.json') else 'Claude Code'} ({newest})"
        gone = {}
        while time.time_ns() - last_ns < 7e9:
            have = set(tui.task_files(folder))
            for n in before:
                if n not in have and n not in gone:
                    gone[n] = (time.time_ns() - last_ns) / 1e9
            time.sleep(0.05)
        end = tui.folder_state(folder)
    finally:
        s.close()
    hwm = end.get(".highwatermark")
    hwm_txt = (f".highwatermark {hwm[2]!r} written {(hwm[1] - last_ns) / 1e9:+.2f} s" if hwm
               else "no .highwatermark")
    lost = [n for n in ("1.json", "2.json", "3.json", "4.json") if n not in end]
    when = ", ".join(f"{n} +{t:.2f} s" for n, t in sorted(gone.items())) or "none gone"
    ok = all_ok and before == {f"{i}.json": "completed" for i in (1, 2, 3, 4)} and len(lost) == 4
    obs = (f"{order} run {k}: last completion by {last_by}; Claude Code's calls success: {all_ok}; all four completed "
           f"before the wait: {set(before.values()) == {'completed'} and len(before) == 4}; lost {len(lost)} of 4 "
           f"(writer's {[n for n in lost if n in ('1.json', '2.json')]}); gone: {when}; {hwm_txt}; "
           f"7 s after: {sorted(end)}")
    C.log(obs)
    return ok, obs, list(gone.values())


def main():
    a = C.parse_args("2.1.332", runs=2)
    C.install(a.version)
    load = C.loadavg()
    res = {"cc-last": [], "writer-last": []}
    obs, times = [], []
    for k in range(1, a.runs + 1):
        for order in ("cc-last", "writer-last"):
            ok, o, t = one_run(a.version, k, order)
            res[order].append(ok)
            obs.append(o)
            if order == "cc-last":
                times += t
    span = f"{min(times):.2f}-{max(times):.2f} s" if times else "never"
    C.finish(a.version, all(res["cc-last"]),
             f"Claude Code's completion last: 4 of 4 task files lost (the other writer's too) in "
             f"{sum(res['cc-last'])} of {len(res['cc-last'])} runs, gone {span} after the last completion; "
             f"the other writer's completion last (not published): 4 of 4 lost in {sum(res['writer-last'])} of "
             f"{len(res['writer-last'])} runs; " + "; ".join(obs) + f"; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.332"))
