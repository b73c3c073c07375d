#!/usr/bin/env python3
"""A task store in Claude Code's layout with every part of the contract, behind taskproof's
adapter protocol: the example to copy when your store keeps one JSON file per task.

It keeps its tasks where Claude Code keeps them and in the same form, so `taskproof run` and
`taskproof check` can look at the files (layout `claude-code`):

    ROOT/{list}/{id}.json        one task per file, the task as on the wire (ids are strings)
    ROOT/{list}/.lock            empty; every operation holds an exclusive flock(2) on it
    ROOT/{list}/.highwatermark   the highest id ever handed out in the list, as a number
    ROOT/{list}/.journal         only while a change to several files is being applied
    ROOT/{list}/.tmp             only while one file is being written, then renamed

docs/adapters.md ("Claude Code's layout on disk") says why each one is there. The store
declares every optional part a store can have (delete, claim, edges, edges_at_create,
edge_removal, metadata, owner, active_form, lists) and holds to the strict profile, so

    taskproof run --target 'cmd:python3 examples/adapters/python/claude_code_store.py'

passes the whole suite. Python 3 standard library only, Linux or macOS (flock).

It has two halves. `ListStore` is the store: the files of one list, under its lock. Below
`# --- the protocol boundary ---` every request line is checked for form (the first step of
docs/spec.md §3's order of checks), handed to the store and answered with one line.
"""

import errno
import fcntl
import json
import os
import re
import stat
import sys
import traceback

PROTOCOL = 2
NAME = "claude-code-layout-example"
VERSION = "1.0.0"
FEATURES = [
    "delete", "claim", "edges", "edges_at_create", "edge_removal",
    "metadata", "owner", "active_form", "lists",
]

STATUSES = ("pending", "in_progress", "completed")
LIST_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
WIRE_ID = re.compile(r"(?:0|[1-9][0-9]*)\Z")
TASK_FILE = re.compile(r"(0|[1-9][0-9]*)\.json\Z")
MAX_ID = 2**64 - 1
MAX_SUBJECT = 200
# The store's own files: names starting with "." are never task files (S15).
LOCK, WATERMARK, JOURNAL, TMP = ".lock", ".highwatermark", ".journal", ".tmp"


class Failure(Exception):
    """A request that fails with one of the error kinds of docs/spec.md §2."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def reject_constant(name):
    raise ValueError(f"{name} is not JSON")


# --------------------------------------------------------------------------------------
# The store: one folder per list. Every operation opens the list under its lock, reads
# what it needs, changes copies, and writes only when every check passed: a failed
# request changes nothing, and operations from any number of processes are linearizable.
# --------------------------------------------------------------------------------------


class ListStore:
    """The files of one list, held under the list's lock for one operation."""

    def __init__(self, root, name, create):
        self.folder = os.path.join(root, name)
        self.lock_fd = None
        self.cache = {}  # id -> task dict, None (no such file) or Failure (unreadable)
        self.changed = {}  # id -> task dict to write, or None to remove
        try:
            st = os.lstat(self.folder)
        except FileNotFoundError:
            if not create:
                self.folder = None  # a list never written: reads find nothing (S13)
                return
            os.makedirs(self.folder, exist_ok=True)
            st = os.lstat(self.folder)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise Failure("corrupt", f"the folder of list {name} is not a folder (a link?)")
        try:
            self.lock_fd = os.open(
                os.path.join(self.folder, LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644
            )
        except OSError as e:
            raise Failure("io", f"cannot open {name}/{LOCK}: {e}") from None
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        # Only a holder of the lock that died leaves these behind.
        try:
            os.unlink(os.path.join(self.folder, TMP))
        except FileNotFoundError:
            pass
        self.replay_journal()

    def exists(self):
        return self.folder is not None

    def close(self):
        if self.lock_fd is not None:
            os.close(self.lock_fd)  # releases the flock
            self.lock_fd = None

    # -- files -------------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.folder, name)

    def write_whole(self, name, data):
        """Writes `data` to `name` so that a reader sees the old file or the new one, never
        part of one (S18): `.tmp`, fsync, rename over the name, fsync the folder. A rename
        replaces a symbolic link at `name` and never writes through it (S17)."""
        fd = os.open(self.path(TMP), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(self.path(TMP), self.path(name))
        self.sync_folder()

    def remove(self, name):
        try:
            os.unlink(self.path(name))
        except FileNotFoundError:
            pass
        self.sync_folder()

    def sync_folder(self):
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def apply(self, files):
        """Writes every file of `files` (name -> bytes, or None to remove). A change to
        several files goes through `.journal` first, so that a SIGKILL at any moment leaves
        the change either not begun or, once the next operation replays the journal, whole
        (edges stay mirrored: S8, S10, S14)."""
        if len(files) > 1:
            entries = {n: (None if d is None else d.decode("utf-8")) for n, d in files.items()}
            self.write_whole(JOURNAL, json.dumps(entries).encode("utf-8"))
        for name, data in files.items():
            if data is None:
                self.remove(name)
            else:
                self.write_whole(name, data)
        if len(files) > 1:
            self.remove(JOURNAL)

    def replay_journal(self):
        try:
            st = os.lstat(self.path(JOURNAL))
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise Failure("io", f"{JOURNAL} is not a regular file; move it away by hand")
        with open(self.path(JOURNAL), "rb") as f:
            try:
                entries = json.loads(f.read().decode("utf-8"))
            except ValueError as e:
                raise Failure("io", f"{JOURNAL} cannot be read ({e}); move it away by hand") from None
        # Whole contents and removals: replaying twice does no harm.
        for name, text in entries.items():
            if text is None:
                self.remove(name)
            else:
                self.write_whole(name, text.encode("utf-8"))
        self.remove(JOURNAL)

    def task_ids(self):
        if self.folder is None:
            return []
        return sorted(int(m.group(1)) for m in map(TASK_FILE.match, os.listdir(self.folder)) if m)

    def read_file(self, tid):
        """The task stored as `{tid}.json`: a dict, None when there is no such file (or it is
        a folder), or Failure("corrupt") when it cannot be read as a task."""
        if self.folder is None:
            return None
        try:
            fd = os.open(self.path(f"{tid}.json"), os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:  # a symbolic link is never followed (S17)
                return Failure("corrupt", f"{tid}.json is a symbolic link")
            raise
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                return None  # a folder named like a task file is not one (S15)
            return Failure("corrupt", f"{tid}.json is not a regular file")
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        try:
            task = json.loads(data.decode("utf-8"), parse_constant=reject_constant)
            check_stored(task, tid)
        except (ValueError, RecursionError) as e:
            return Failure("corrupt", f"{tid}.json: {e}")
        return task

    def get(self, tid):
        """The task with id `tid` as this operation sees it (its own changes included)."""
        if tid in self.changed:
            return self.changed[tid]
        if tid not in self.cache:
            self.cache[tid] = self.read_file(tid)
        return self.cache[tid]

    def task(self, tid):
        """The task `tid`, which must exist and be readable."""
        t = self.get(tid)
        if isinstance(t, Failure):
            raise t
        if t is None:
            raise Failure("not_found", f"task {tid} not found")
        return t

    def put(self, task):
        self.changed[int(task["id"])] = task

    def commit(self):
        files = {
            f"{tid}.json": None if t is None else encode(t) for tid, t in self.changed.items()
        }
        if files:
            self.apply(files)

    # -- ids ---------------------------------------------------------------------------

    def next_id(self):
        """One more than the highest id ever handed out in the list (S1). A watermark that
        is missing, unreadable or a link counts as the highest task file on disk, so it never
        hands out the id of a task that exists."""
        present = self.task_ids()
        high = max(present, default=0)
        try:
            fd = os.open(self.path(WATERMARK), os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                text = f.read().decode("ascii").strip().rstrip("\0").strip()
            if WIRE_ID.match(text):
                high = max(high, int(text))
        except (OSError, ValueError):
            pass
        return high + 1

    # -- edges -------------------------------------------------------------------------

    def neighbours(self, tid):
        """The ids `tid` blocks, as its own `blocks` says."""
        t = self.get(tid)
        return [] if not isinstance(t, dict) else [int(i) for i in t.get("blocks", [])]

    def waits_on(self, tid):
        """The ids `tid` waits on, as its own `blockedBy` says."""
        t = self.get(tid)
        return [] if not isinstance(t, dict) else [int(i) for i in t.get("blockedBy", [])]

    def reaches(self, start, goal):
        """Whether `goal` waits, directly or not, on `start`: a path of `blocks` forward from
        `start`, or of `blockedBy` backward from `goal`, so that a chain another program
        recorded on one side only is still found (S7, S16)."""
        seen, todo = set(), [start]
        while todo:
            tid = todo.pop()
            if tid == goal:
                return True
            if tid in seen:
                continue
            seen.add(tid)
            todo.extend(self.neighbours(tid))
        # And backward from the goal along blockedBy.
        seen, todo = set(), [goal]
        while todo:
            tid = todo.pop()
            if tid == start:
                return True
            if tid in seen:
                continue
            seen.add(tid)
            todo.extend(self.waits_on(tid))
        return False

    def other(self, oid, new_id=None):
        """The other end of a new edge: it must exist in this list (S6) and be readable."""
        t = None if oid == new_id else self.get(oid)
        if isinstance(t, Failure):
            raise Failure("corrupt", f"task {oid} cannot be read: {t.message}")
        if t is None:
            raise Failure("dangling", f"task {oid} does not exist in this list")
        return t

    def add_edge(self, blocker, blocked, new_id=None):
        """Records "`blocker` blocks `blocked`" on both tasks (S8), after the checks of
        docs/spec.md §3 in their order: the other task exists (S6), a completed task gains
        no unfinished blocker (S5), no cycle (S7, a self-edge included)."""
        a, b = self.get(blocker), self.get(blocked)
        if str(blocked) in a.get("blocks", []) and str(blocker) in b.get("blockedBy", []):
            return
        if b["status"] == "completed" and a["status"] != "completed":
            raise Failure("blocked", f"task {blocked} is completed; task {blocker} is not")
        if blocker == blocked or self.reaches(blocked, blocker):
            raise Failure("cycle", f"task {blocker} already waits on task {blocked}")
        add_id(a, "blocks", blocked)
        add_id(b, "blockedBy", blocker)
        self.put(a)
        self.put(b)

    def remove_edge(self, blocker, blocked):
        """Removes "`blocker` blocks `blocked`" from each side that can be read."""
        for tid, field, oid in ((blocker, "blocks", blocked), (blocked, "blockedBy", blocker)):
            t = self.get(tid)
            if isinstance(t, dict) and str(oid) in t.get(field, []):
                t[field] = [i for i in t[field] if i != str(oid)]
                self.put(t)

    def unfinished_blockers(self, task):
        """The blockers of `task` that are not completed: a missing one does not block, an
        unreadable one does (nobody can tell it finished)."""
        out = []
        for b in task.get("blockedBy", []):
            t = self.get(int(b))
            if isinstance(t, Failure) or (t is not None and t["status"] != "completed"):
                out.append(b)
        return out


def add_id(task, field, tid):
    ids = task.setdefault(field, [])
    if str(tid) not in ids:
        ids.append(str(tid))
        ids.sort(key=int)


def encode(task):
    return (json.dumps(task, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def check_stored(task, tid):
    """Raises ValueError unless `task` is a task of docs/spec.md §1 stored for `tid`. Fields
    another program added stay in the dict and survive updates (S16)."""
    if not isinstance(task, dict):
        raise ValueError("not a JSON object")
    if task.get("id") != str(tid):
        raise ValueError(f"`id` is {task.get('id')!r}, expected {str(tid)!r}")
    subject = task.get("subject")
    if not isinstance(subject, str) or not 1 <= len(subject) <= MAX_SUBJECT:
        raise ValueError("`subject` is missing or not 1 to 200 characters")
    if task.get("status") not in STATUSES:
        raise ValueError(f"`status` is {task.get('status')!r}")
    for key in ("description", "activeForm", "owner"):
        if task.get(key) is not None and not isinstance(task[key], str):
            raise ValueError(f"`{key}` is not a string")
    if task.get("metadata") is not None and not isinstance(task["metadata"], dict):
        raise ValueError("`metadata` is not an object")
    for key in ("blocks", "blockedBy"):
        edges = task.setdefault(key, [])
        if not isinstance(edges, list) or not all(
            isinstance(e, str) and WIRE_ID.match(e) and int(e) <= MAX_ID for e in edges
        ):
            raise ValueError(f"`{key}` is not an array of ids")
    task.setdefault("description", "")
    if not is_text(task):
        raise ValueError("holds text that is not Unicode")


class Opened:
    """`with Opened(root, list, create) as s:` the list's store under its lock."""

    def __init__(self, root, name, create=False):
        self.args = (root, name, create)

    def __enter__(self):
        self.store = ListStore(*self.args)
        return self.store

    def __exit__(self, *exc):
        self.store.close()


# -- the operations, each with its request already checked for form ---------------------


def create(root, name, new, blocked_by, blocks):
    # An edge in a list never written names no task: dangling, and no folder is made.
    if (blocked_by or blocks) and not os.path.lexists(os.path.join(root, name)):
        raise Failure("dangling", f"task {(blocked_by + blocks)[0]} does not exist in this list")
    with Opened(root, name, create=True) as s:
        tid = s.next_id()
        task = {"id": str(tid), "subject": new["subject"], "description": new.get("description") or "",
                "status": "pending", "blocks": [], "blockedBy": []}
        for key in ("activeForm", "owner", "metadata"):
            if new.get(key):
                task[key] = new[key]
        s.changed[tid] = task
        for b in blocked_by:
            s.other(b, new_id=tid)
            s.add_edge(b, tid)
        for b in blocks:
            s.other(b, new_id=tid)
            s.add_edge(tid, b)
        # The watermark first, on its own: a SIGKILL before the task is written skips an
        # id, never hands one out twice.
        s.write_whole(WATERMARK, f"{tid}\n".encode("ascii"))
        s.commit()
        return task


def get(root, name, tid):
    with Opened(root, name) as s:
        return s.task(tid)


def update(root, name, tid, patch, edges):
    with Opened(root, name) as s:
        if not s.exists():
            raise Failure("not_found", f"task {tid} not found")
        task = s.task(tid)
        # 1. fields and metadata
        for key in ("subject", "description"):
            if key in patch:
                task[key] = patch[key]
        for key in ("activeForm", "owner"):
            if key in patch:
                if patch[key] in (None, ""):
                    task.pop(key, None)
                else:
                    task[key] = patch[key]
        if "metadata" in patch:
            if patch["metadata"] is None:
                task.pop("metadata", None)
            else:
                merged = dict(task.get("metadata") or {})
                for k, v in patch["metadata"].items():
                    if v is None:
                        merged.pop(k, None)
                    else:
                        merged[k] = v
                if merged:
                    task["metadata"] = merged
                else:
                    task.pop("metadata", None)
        s.put(task)
        # 2. edge removals
        for oid in edges["removeBlockedBy"]:
            s.remove_edge(oid, tid)
        for oid in edges["removeBlocks"]:
            s.remove_edge(tid, oid)
        # 3. status: its value, then transition, then blockers
        if "status" in patch and patch["status"] != task["status"]:
            status = patch["status"]
            if status not in STATUSES:
                raise Failure("invalid", f"patch.status: expected one of {', '.join(STATUSES)}, got {status!r}")
            if task["status"] == "completed":
                raise Failure("transition", f"task {tid} is completed, which is final")
            waiting = s.unfinished_blockers(task)
            if waiting:
                raise Failure("blocked", f"task {tid} waits on unfinished tasks {', '.join(waiting)}")
            task["status"] = status
        elif "status" in patch and patch["status"] not in STATUSES:
            raise Failure("invalid", f"patch.status: {patch['status']!r}")
        # 4. edge additions, addBlockedBy then addBlocks, id by id
        for oid in edges["addBlockedBy"]:
            s.other(oid)
            s.add_edge(oid, tid)
        for oid in edges["addBlocks"]:
            s.other(oid)
            s.add_edge(tid, oid)
        s.commit()
        return s.task(tid)


def delete(root, name, tid):
    with Opened(root, name) as s:
        t = s.get(tid) if s.exists() else None
        if t is None:
            raise Failure("not_found", f"task {tid} not found")
        if isinstance(t, dict):
            # S10: its id leaves every neighbour it names, in the same atomic step.
            for oid in t.get("blocks", []):
                s.remove_edge(tid, int(oid))
            for oid in t.get("blockedBy", []):
                s.remove_edge(int(oid), tid)
        # A corrupt file (or a link) is removed itself; a link's target is left alone.
        s.changed[tid] = None
        s.commit()


def list_tasks(root, name):
    with Opened(root, name) as s:
        tasks, corrupt = [], []
        for tid in s.task_ids():
            t = s.get(tid)
            if isinstance(t, Failure):
                corrupt.append(f"{tid}.json")
            elif t is not None:
                tasks.append(t)
        return tasks, corrupt


def claim(root, name, tid, owner):
    with Opened(root, name) as s:
        if not s.exists():
            raise Failure("not_found", f"task {tid} not found")
        task = s.task(tid)
        if task.get("owner"):
            raise Failure("conflict", f"task {tid} is already owned by {task['owner']!r}")
        if task["status"] != "pending":
            raise Failure("conflict", f"task {tid} is {task['status']}, not pending")
        waiting = s.unfinished_blockers(task)
        if waiting:
            raise Failure("blocked", f"task {tid} waits on unfinished tasks {', '.join(waiting)}")
        task["status"] = "in_progress"
        task["owner"] = owner
        s.put(task)
        s.commit()
        return task


# --------------------------------------------------------------------------------------
# --- the protocol boundary ---
# The form of each request (docs/spec.md §2), checked before the store sees it.
# --------------------------------------------------------------------------------------

FIELDS = {
    "hello": ("op",),
    "create": ("op", "list", "task"),
    "get": ("op", "list", "id"),
    "update": ("op", "list", "id", "patch"),
    "delete": ("op", "list", "id"),
    "list": ("op", "list"),
    "claim": ("op", "list", "id", "owner"),
}
NEW_FIELDS = ("subject", "description", "activeForm", "owner", "metadata", "blockedBy", "blocks")
PATCH_FIELDS = ("subject", "description", "activeForm", "status", "owner", "metadata",
                "addBlockedBy", "addBlocks", "removeBlockedBy", "removeBlocks")
EDGE_FIELDS = ("addBlockedBy", "addBlocks", "removeBlockedBy", "removeBlocks")


def invalid(field, message):
    return Failure("invalid", f"{field}: {message}")


def type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    return {str: "a string", list: "an array", dict: "an object"}[type(v)]


def wire_id(v, field):
    if not isinstance(v, str) or not WIRE_ID.match(v) or int(v) > MAX_ID:
        raise invalid(field, f"expected an id string of decimal digits, got {v!r}")
    return int(v)


def wire_ids(v, field):
    if v is None:
        return []
    if not isinstance(v, list):
        raise invalid(field, f"expected an array of ids, got {type_name(v)}")
    out = []
    for i, item in enumerate(v):
        n = wire_id(item, f"{field}[{i}]")
        if n not in out:
            out.append(n)
    return out


def text(obj, key, field, nullable, subject=False):
    """A string field's value, None when absent (or null where null is allowed)."""
    v = obj.get(key)
    if v is None:
        if key in obj and not nullable:
            raise invalid(field, "cannot be null")
        return None
    if not isinstance(v, str):
        raise invalid(field, f"expected a string, got {type_name(v)}")
    if subject and not 1 <= len(v) <= MAX_SUBJECT:
        raise invalid(field, f"expected 1 to {MAX_SUBJECT} characters, got {len(v)}")
    return v


def metadata(obj, field):
    v = obj.get("metadata")
    if v is not None and not isinstance(v, dict):
        raise invalid(field, f"expected an object or null, got {type_name(v)}")
    return v


def known_only(obj, known, what):
    if not isinstance(obj, dict):
        raise invalid(what, f"expected an object, got {type_name(obj)}")
    for k in obj:
        if k not in known:
            raise invalid(f"{what}.{k}", "unknown field")


def list_name(obj):
    v = obj.get("list")
    if not isinstance(v, str) or not LIST_NAME.match(v):
        raise invalid("list", f"expected 1 to 64 characters of [A-Za-z0-9_-], got {v!r}")
    return v


def handle(root, obj):
    """Answers one decoded request with a response dict (without `ok`)."""
    if not isinstance(obj, dict):
        raise invalid("request", f"expected an object, got {type_name(obj)}")
    op = obj.get("op")
    if not isinstance(op, str) or op not in FIELDS:
        raise invalid("op", f"expected one of {', '.join(FIELDS)}, got {op!r}")
    for k in obj:
        if k not in FIELDS[op]:
            raise invalid(k, f"unknown field for {op}")
    if op == "hello":
        return {"protocol": PROTOCOL, "name": NAME, "version": VERSION,
                "layout": "claude-code", "features": FEATURES}
    name = list_name(obj)
    if op == "list":
        tasks, corrupt = list_tasks(root, name)
        return {"tasks": tasks, "corrupt": corrupt}
    if op == "create":
        if "task" not in obj:
            raise invalid("task", "missing")
        new = obj["task"]
        known_only(new, NEW_FIELDS, "task")
        if text(new, "subject", "task.subject", nullable=False, subject=True) is None:
            raise invalid("task.subject", "missing")
        text(new, "description", "task.description", nullable=True)
        text(new, "activeForm", "task.activeForm", nullable=True)
        text(new, "owner", "task.owner", nullable=True)
        metadata(new, "task.metadata")
        blocked_by = wire_ids(new.get("blockedBy"), "task.blockedBy")
        blocks = wire_ids(new.get("blocks"), "task.blocks")
        return {"task": create(root, name, new, blocked_by, blocks)}
    if "id" not in obj:
        raise invalid("id", "missing")
    tid = wire_id(obj["id"], "id")
    if op == "get":
        return {"task": get(root, name, tid)}
    if op == "delete":
        delete(root, name, tid)
        return {}
    if op == "claim":
        owner = obj.get("owner")
        if not isinstance(owner, str) or not owner:
            raise invalid("owner", "expected a non-empty string")
        return {"task": claim(root, name, tid, owner)}
    if "patch" not in obj:
        raise invalid("patch", "missing")
    patch = obj["patch"]
    known_only(patch, PATCH_FIELDS, "patch")
    text(patch, "subject", "patch.subject", nullable=False, subject=True)
    text(patch, "description", "patch.description", nullable=False)
    # A status's type is form; its value is judged after the task is found (S3).
    text(patch, "status", "patch.status", nullable=False)
    text(patch, "activeForm", "patch.activeForm", nullable=True)
    text(patch, "owner", "patch.owner", nullable=True)
    metadata(patch, "patch.metadata")
    edges = {k: wire_ids(patch.get(k), f"patch.{k}") for k in EDGE_FIELDS}
    return {"task": update(root, name, tid, patch, edges)}


def is_text(value):
    """Whether every string in `value` is Unicode (Python's json takes lone surrogates from
    `\\ud800` escapes, which no UTF-8 file can hold)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
    return True


def answer(root, line):
    """The response to one raw request line. Never raises."""
    try:
        try:
            obj = json.loads(line.decode("utf-8"), parse_constant=reject_constant)
        except (ValueError, RecursionError) as e:
            raise invalid("request", f"not valid JSON: {e}") from None
        if not is_text(obj):
            raise invalid("request", "a string holds a lone surrogate")
        return {"ok": True, **handle(root, obj)}
    except Failure as f:
        return {"ok": False, "error": {"kind": f.kind, "message": f.message}}
    except Exception as e:  # any other storage failure: `io`, never a crash
        traceback.print_exc(file=sys.stderr)
        return {"ok": False, "error": {"kind": "io", "message": f"{type(e).__name__}: {e}"}}


def main():
    root = os.environ.get("TASKPROOF_ROOT")
    if not root:
        print("claude_code_store: TASKPROOF_ROOT is not set", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        response = answer(root, line.rstrip(b"\r\n"))
        try:
            out.write(json.dumps(response, ensure_ascii=True).encode("ascii") + b"\n")
            out.flush()
        except BrokenPipeError:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
