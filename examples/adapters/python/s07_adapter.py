#!/usr/bin/env python3
"""A taskproof adapter around a model of the learn-claude-code lesson s07 task manager.

This file is the starting point for wrapping your own task store. It has two halves:

* ``S07Store`` is the store under test. It is a faithful, self-written model of the
  s07 ``TaskManager`` as taskproof's SPEC §5 describes it (one ``task_{n}.json`` per
  task, integer ids on disk, the next id computed once at start-up, edges mirrored
  when added, completion clearing the id from other tasks' ``blockedBy``, no lock).
  Replace this class with calls into your own store.
* Everything below ``# --- the protocol boundary ---`` speaks the adapter protocol of
  SPEC §2: it checks the form of each request line, calls the store, converts the
  store's integer ids to strings, and writes exactly one answer line per request.
  You normally keep it as it is.

Python 3 standard library only. Run it through the harness:

    taskproof run scenarios --target 'cmd:python3 examples/adapters/python/s07_adapter.py' --profile s07

The store breaks some strict rules on purpose, because the store it models does; see
examples/adapters/README.md for the list.
"""

import errno
import json
import os
import re
import stat
import sys
import traceback

PROTOCOL = 2
NAME = "s07-example-adapter"
VERSION = "1.0.0"

STATUSES = ("pending", "in_progress", "completed")
LIST_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
WIRE_ID = re.compile(r"(?:0|[1-9][0-9]*)\Z")
TASK_FILE = re.compile(r"task_(0|[1-9][0-9]*)\.json\Z")
MAX_ID = 2**64 - 1


class Failure(Exception):
    """A request that fails with one of the error kinds of SPEC §2."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def is_int(v):
    # bool is a subclass of int in Python; JSON true is not an id.
    return isinstance(v, int) and not isinstance(v, bool)


# --------------------------------------------------------------------------------------
# The store: a model of the s07 TaskManager, one folder per list under the root.
# Replace this class with your own store; keep its five methods' contracts:
#   create(list, subject, description, blocked_by, blocks) -> task dict
#   get(list, id) -> task dict          update(list, id, ...) -> task dict
#   list_tasks(list) -> (tasks, corrupt file names)
# where a task dict is the store's own on-disk form (integer ids) and failures raise
# Failure(kind, message).
# --------------------------------------------------------------------------------------


class S07Store:
    """The s07 task manager, generalised from one `.tasks/` folder to one folder per list.

    Deliberate properties of the model (SPEC §5):
    * the next id of each list is its highest task file id plus one, computed once when
      the process starts; two processes therefore hand out the same id, and the later
      write replaces the earlier task;
    * any of the three statuses may follow any other, and blockers are not enforced;
    * edge references are not checked; cycles and self-edges are accepted;
    * an edge added from either side is written into the other task too when it exists;
    * completing a task removes its id from every other task's `blockedBy`, while its
      own `blocks` keeps them;
    * files are truncated and rewritten in place, with no lock.
    It still never follows a symbolic link inside the root (S17 holds for s07).
    """

    def __init__(self, root):
        self.root = root
        os.makedirs(root, exist_ok=True)
        # The s07 TaskManager computes `_next_id` once, in its constructor. This adapter
        # process is that constructor's lifetime: every list that exists now gets its
        # counter from the files present now, and a list that appears later starts at 1.
        self.next_ids = {}
        try:
            names = os.listdir(root)
        except OSError:
            names = []
        for name in names:
            if LIST_NAME.match(name) and self._is_real_dir(os.path.join(root, name)):
                self.next_ids[name] = self._max_file_id(os.path.join(root, name)) + 1

    # -- files -------------------------------------------------------------------------

    @staticmethod
    def _is_real_dir(path):
        try:
            return stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            return False

    @staticmethod
    def _max_file_id(folder):
        ids = []
        try:
            for name in os.listdir(folder):
                m = TASK_FILE.match(name)
                if m:
                    ids.append(int(m.group(1)))
        except OSError:
            pass
        return max(ids) if ids else 0

    def _folder(self, list_name, create):
        """The list's folder, or None when the list was never written."""
        path = os.path.join(self.root, list_name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if not create:
                return None
            try:
                os.mkdir(path)
                return path
            except FileExistsError:  # another process made it meanwhile
                st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise Failure("corrupt", f"list folder {list_name} is a symbolic link")
        if not stat.S_ISDIR(st.st_mode):
            raise Failure("corrupt", f"list folder {list_name} is not a folder")
        return path

    @staticmethod
    def _file(folder, task_id):
        return os.path.join(folder, f"task_{task_id}.json")

    def _read(self, folder, task_id):
        """The task stored under `task_id`: a dict, None when there is no such file, or
        Failure("corrupt") when the file cannot be read as a task."""
        name = f"task_{task_id}.json"
        try:
            fd = os.open(self._file(folder, task_id), os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Failure("corrupt", f"{name} is a symbolic link") from None
            raise
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            os.close(fd)
            raise
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                return None  # a folder is not a task file (S15)
            raise Failure("corrupt", f"{name} is not a regular file")
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        try:
            task = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, RecursionError) as e:
            raise Failure("corrupt", f"{name} is not valid JSON: {e}") from None
        _check_stored(task, task_id, name)
        return task

    def _load(self, folder, task_id):
        task = self._read(folder, task_id) if folder is not None else None
        if task is None:
            raise Failure("not_found", f"task {task_id} not found")
        return task

    def _save(self, folder, task):
        # Like the original's `path.write_text(...)`: truncate and rewrite in place, no
        # lock, no temporary file (so S18 is not kept). O_NOFOLLOW keeps S17: a link
        # planted at the task's name is refused, never written through.
        data = json.dumps(task, indent=2).encode("ascii") + b"\n"
        path = self._file(folder, task["id"])
        try:
            fd = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644
            )
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Failure("corrupt", f"task_{task['id']}.json is a symbolic link") from None
            raise
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    # -- operations --------------------------------------------------------------------

    def create(self, list_name, subject, description, blocked_by, blocks):
        folder = self._folder(list_name, create=True)
        task_id = self.next_ids.get(list_name, 1)
        task = {
            "id": task_id,
            "subject": subject,
            "description": description,
            "status": "pending",
            "blockedBy": [],
            "blocks": [],
            "owner": "",
        }
        # The original creates with subject and description only; edges given at creation
        # are added the way an update would add them, mirrored like any other addition.
        self._check_neighbours(folder, task_id, blocked_by + blocks)
        self.next_ids[list_name] = task_id + 1
        self._add_edges(folder, task, blocked_by, blocks)
        self._save(folder, task)
        return task

    def get(self, list_name, task_id):
        return self._load(self._folder(list_name, create=False), task_id)

    def update(self, list_name, task_id, subject, description, status, blocked_by, blocks):
        folder = self._folder(list_name, create=False)
        task = self._load(folder, task_id)
        if status is not None and status not in STATUSES:
            raise Failure(
                "invalid",
                f"patch.status: expected pending, in_progress or completed, got {status!r}",
            )
        # Every task this update writes besides its own must be readable before anything
        # is written: a failed request changes nothing.
        self._check_neighbours(folder, task_id, blocked_by + blocks)
        if subject is not None:
            task["subject"] = subject
        if description is not None:
            task["description"] = description
        if status is not None:
            task["status"] = status  # any transition; blockers are not looked at
            if status == "completed":
                self._clear_dependency(folder, task_id)
        self._add_edges(folder, task, blocked_by, blocks)
        self._save(folder, task)
        return task

    def list_tasks(self, list_name):
        folder = self._folder(list_name, create=False)
        if folder is None:
            return [], []
        ids = []
        for name in os.listdir(folder):
            m = TASK_FILE.match(name)
            if m:
                ids.append(int(m.group(1)))
        tasks, corrupt = [], []
        for task_id in sorted(ids):
            try:
                task = self._read(folder, task_id)
            except Failure:
                corrupt.append(f"task_{task_id}.json")
                continue
            if task is not None:
                tasks.append(task)
        return tasks, corrupt

    # -- edges -------------------------------------------------------------------------

    def _check_neighbours(self, folder, task_id, others):
        for other in others:
            if other != task_id:
                try:
                    self._read(folder, other)
                except Failure as f:
                    raise Failure("corrupt", f"task {other} cannot be read: {f.message}") from None

    def _add_edges(self, folder, task, blocked_by, blocks):
        """Adds "x blocks task" for x in blocked_by and "task blocks x" for x in blocks,
        writing the mirror into x when x exists. A missing x is kept on this side only;
        a self-edge lands in `blockedBy` only (the original's final save of the task
        overwrites the mirrored copy)."""
        me = task["id"]
        for other in blocked_by:
            if other not in task["blockedBy"]:
                task["blockedBy"].append(other)
            if other != me:
                self._mirror(folder, other, "blocks", me)
        for other in blocks:
            if other == me:
                if me not in task["blockedBy"]:
                    task["blockedBy"].append(me)
                continue
            if other not in task["blocks"]:
                task["blocks"].append(other)
            self._mirror(folder, other, "blockedBy", me)

    def _mirror(self, folder, other, field, me):
        neighbour = self._read(folder, other)
        if neighbour is None:
            return
        edges = neighbour.setdefault(field, [])
        if me not in edges:
            edges.append(me)
            self._save(folder, neighbour)

    def _clear_dependency(self, folder, done_id):
        # Every other task stops waiting on the completed one; its own `blocks` stays.
        # A file that cannot be read cannot be rewritten either, so it is left alone.
        for name in os.listdir(folder):
            m = TASK_FILE.match(name)
            if not m or int(m.group(1)) == done_id:
                continue
            try:
                other = self._read(folder, int(m.group(1)))
            except Failure:
                continue
            if other is not None and done_id in other.get("blockedBy", []):
                other["blockedBy"] = [b for b in other["blockedBy"] if b != done_id]
                self._save(folder, other)


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _check_stored(task, task_id, name):
    """Raises Failure("corrupt") unless `task` is a readable s07 task file for `task_id`.

    The s07 format: integer `id` matching the file name, string `subject` and `status`
    (any status string is kept, the lesson's list shows it as [?]), optional `description`
    string, `blocks`/`blockedBy` arrays of integer ids (absent counts as empty), `owner`
    string. Fields written by other programs stay in the dict and survive updates (S16),
    but one of SPEC §1's fields with the wrong type makes the file unreadable.
    """

    def bad(why):
        raise Failure("corrupt", f"{name}: {why}")

    if not isinstance(task, dict):
        bad("not a JSON object")
    if not is_int(task.get("id")) or task["id"] != task_id:
        bad(f"`id` is {task.get('id')!r}, expected the integer {task_id}")
    for key in ("subject", "status"):
        if not isinstance(task.get(key), str):
            bad(f"`{key}` is missing or not a string")
    for key in ("description", "owner", "activeForm"):
        if task.get(key) is not None and not isinstance(task[key], str):
            bad(f"`{key}` is not a string")
    if task.get("metadata") is not None and not isinstance(task["metadata"], dict):
        bad("`metadata` is not an object")
    for key in ("blocks", "blockedBy"):
        edges = task.get(key)
        if edges is None:
            task[key] = []
            continue
        if not isinstance(edges, list):
            bad(f"`{key}` is not an array")
        ids = []
        for e in edges:
            # Integers are the s07 format; a canonical decimal string (another program's
            # habit) is read as the same id.
            if is_int(e) and 0 <= e <= MAX_ID:
                ids.append(e)
            elif isinstance(e, str) and WIRE_ID.match(e) and int(e) <= MAX_ID:
                ids.append(int(e))
            else:
                bad(f"`{key}` holds {e!r}, which is not a task id")
        task[key] = ids
    if not _is_text(task):
        bad("holds text that is not Unicode")


# --------------------------------------------------------------------------------------
# --- the protocol boundary ---
# Request form checks (SPEC §2, first step of §3's order of checks), the conversion
# between the store's integer ids and the wire's strings, and the line loop.
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
PATCH_FIELDS = (
    "subject",
    "description",
    "activeForm",
    "status",
    "owner",
    "metadata",
    "addBlockedBy",
    "addBlocks",
    "removeBlockedBy",
    "removeBlocks",
)


def invalid(field, message):
    return Failure("invalid", f"{field}: {message}")


def type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"


def wire_id(v, field):
    """A wire id (a string of decimal digits, no leading zero) as the store's integer."""
    if not isinstance(v, str):
        raise invalid(field, f"expected an id string, got {type_name(v)}")
    if not WIRE_ID.match(v):
        raise invalid(field, f"expected an id of decimal digits without a leading zero, got {v!r}")
    n = int(v)
    if n > MAX_ID:
        raise invalid(field, f"id {v!r} is too large")
    return n


def wire_ids(v, field):
    if v is None:
        return []
    if not isinstance(v, list):
        raise invalid(field, f"expected an array of id strings, got {type_name(v)}")
    out = []
    for i, item in enumerate(v):
        n = wire_id(item, f"{field}[{i}]")
        if n not in out:
            out.append(n)
    return out


def list_name(obj):
    if "list" not in obj:
        raise invalid("list", "missing")
    v = obj["list"]
    if not isinstance(v, str):
        raise invalid("list", f"expected a list name string, got {type_name(v)}")
    if not LIST_NAME.match(v):
        raise invalid("list", f"expected 1 to 64 characters of [A-Za-z0-9_-], got {v!r}")
    return v


def required_id(obj):
    if "id" not in obj:
        raise invalid("id", "missing")
    return wire_id(obj["id"], "id")


def string_field(obj, key, field, nullable):
    """A string field: None when absent (or null, if nullable)."""
    v = obj.get(key)
    if v is None:
        if key in obj and not nullable:
            raise invalid(field, "cannot be removed (null is only for activeForm, owner and metadata)")
        return None
    if not isinstance(v, str):
        raise invalid(field, f"expected a string{' or null' if nullable else ''}, got {type_name(v)}")
    return v


def absent_fields(obj, prefix):
    """Checks the form of `owner`, `activeForm` and `metadata` and returns the names of
    those the request sets. The s07 task has none of them: setting one is `unsupported`,
    while removing one (null, "" or {}) asks for what is already so and changes nothing."""
    wanted = []
    for key in ("owner", "activeForm"):
        if string_field(obj, key, f"{prefix}.{key}", nullable=True):
            wanted.append(f"{prefix}.{key}")
    md = obj.get("metadata")
    if md is not None and not isinstance(md, dict):
        raise invalid(f"{prefix}.metadata", f"expected an object or null, got {type_name(md)}")
    if md:
        wanted.append(f"{prefix}.metadata")
    return wanted


def deny_unknown(obj, known, prefix):
    for k in obj:
        if k not in known:
            raise invalid(f"{prefix}.{k}", f"unknown field; expected one of {', '.join(known)}")


def handle_create(store, obj):
    name = list_name(obj)
    if "task" not in obj:
        raise invalid("task", "missing")
    new = obj["task"]
    if not isinstance(new, dict):
        raise invalid("task", f"expected an object, got {type_name(new)}")
    deny_unknown(new, NEW_FIELDS, "task")
    if "subject" not in new:
        raise invalid("task.subject", "missing")
    subject = new["subject"]
    if not isinstance(subject, str):
        raise invalid("task.subject", f"expected a string, got {type_name(subject)}")
    # Subjects are not checked in s07 (SPEC §5): an empty or very long one is stored.
    description = string_field(new, "description", "task.description", nullable=True) or ""
    blocked_by = wire_ids(new.get("blockedBy"), "task.blockedBy")
    blocks = wire_ids(new.get("blocks"), "task.blocks")
    wanted = absent_fields(new, "task")
    if wanted:
        raise Failure("unsupported", f"{wanted[0]}: this store has no such field")
    return {"task": to_wire(store.create(name, subject, description, blocked_by, blocks))}


def handle_update(store, obj):
    name = list_name(obj)
    task_id = required_id(obj)
    if "patch" not in obj:
        raise invalid("patch", "missing")
    patch = obj["patch"]
    if not isinstance(patch, dict):
        raise invalid("patch", f"expected an object, got {type_name(patch)}")
    deny_unknown(patch, PATCH_FIELDS, "patch")
    subject = string_field(patch, "subject", "patch.subject", nullable=False)
    description = string_field(patch, "description", "patch.description", nullable=False)
    status = string_field(patch, "status", "patch.status", nullable=False)
    blocked_by = wire_ids(patch.get("addBlockedBy"), "patch.addBlockedBy")
    blocks = wire_ids(patch.get("addBlocks"), "patch.addBlocks")
    wanted = absent_fields(patch, "patch")
    for key in ("removeBlockedBy", "removeBlocks"):
        if wire_ids(patch.get(key), f"patch.{key}"):
            wanted.append(f"patch.{key}")
    # Only once the whole form is known to be right: the request asks for something
    # this store does not have.
    if wanted:
        raise Failure("unsupported", f"{wanted[0]}: this store has no such field or edge removal")
    task = store.update(name, task_id, subject, description, status, blocked_by, blocks)
    return {"task": to_wire(task)}


def handle(store, obj):
    """Answers one decoded request object with a response dict (without `ok`)."""
    if not isinstance(obj, dict):
        raise invalid("request", f"expected an object, got {type_name(obj)}")
    op = obj.get("op")
    if "op" not in obj:
        raise invalid("op", "missing")
    if not isinstance(op, str):
        raise invalid("op", f"expected a string, got {type_name(op)}")
    if op not in FIELDS:
        raise invalid("op", f"unknown op {op!r}; expected one of {', '.join(FIELDS)}")
    for k in obj:
        if k not in FIELDS[op]:
            raise invalid(k, f"unknown field for {op}; expected {', '.join(FIELDS[op])}")
    if op == "hello":
        return {
            "protocol": PROTOCOL,
            "name": NAME,
            "version": VERSION,
            "layout": "s07",
            # The optional parts of the contract this store has (docs/spec.md, "Optional
            # parts"): the lesson's manager has dependencies, given at creation too, and one
            # folder per list; no delete, no claim, no metadata, owner or activeForm, and no
            # way to remove a dependency.
            "features": ["edges", "edges_at_create", "lists"],
        }
    if op == "create":
        return handle_create(store, obj)
    if op == "get":
        name = list_name(obj)
        return {"task": to_wire(store.get(name, required_id(obj)))}
    if op == "update":
        return handle_update(store, obj)
    if op == "list":
        tasks, corrupt = store.list_tasks(list_name(obj))
        return {"tasks": [to_wire(t) for t in tasks], "corrupt": corrupt}
    # delete and claim: the form is checked like everywhere else, then refused.
    list_name(obj)
    required_id(obj)
    if op == "claim":
        owner = obj.get("owner")
        if not isinstance(owner, str) or not owner:
            raise invalid("owner", "expected a non-empty string")
    raise Failure("unsupported", f"this store has no {op}")


def to_wire(task):
    """The store's task dict as SPEC §1's task: string ids, `description` always present,
    unset optional fields left out, fields of other programs passed through."""
    out = {
        "id": str(task["id"]),
        "subject": task["subject"],
        "description": task.get("description") or "",
        "status": task["status"],
        "blocks": [str(i) for i in sorted(set(task.get("blocks") or []))],
        "blockedBy": [str(i) for i in sorted(set(task.get("blockedBy") or []))],
    }
    for key in ("owner", "activeForm", "metadata"):
        if task.get(key):
            out[key] = task[key]
    for key, value in task.items():
        if key not in out and key not in ("owner", "activeForm", "metadata"):
            out[key] = value
    return out


def _is_text(value):
    """Whether every string in `value` is valid Unicode (no lone surrogates, which
    Python's json accepts from `\\ud800` escapes but no UTF-8 writer can encode)."""
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


def answer(store, line):
    """The response to one raw request line. Never raises."""
    try:
        try:
            text = line.decode("utf-8")
            obj = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as e:
            raise invalid("request", f"not valid JSON: {e}") from None
        if not _is_text(obj):
            raise invalid("request", "not valid JSON: a string holds a lone surrogate")
        return {"ok": True, **handle(store, obj)}
    except Failure as f:
        return {"ok": False, "error": {"kind": f.kind, "message": f.message}}
    except Exception as e:  # storage failures and anything unforeseen: `io`, never a crash
        traceback.print_exc(file=sys.stderr)
        return {"ok": False, "error": {"kind": "io", "message": f"{type(e).__name__}: {e}"}}


def main():
    root = os.environ.get("TASKPROOF_ROOT")
    if not root:
        print("s07_adapter: TASKPROOF_ROOT is not set", file=sys.stderr)
        return 2
    store = S07Store(root)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        line = line.rstrip(b"\n").rstrip(b"\r")
        response = answer(store, line)
        try:
            out.write(json.dumps(response, ensure_ascii=True).encode("ascii") + b"\n")
            out.flush()
        except BrokenPipeError:
            return 0  # the harness hung up; nothing left to answer
    return 0


if __name__ == "__main__":
    sys.exit(main())
