#!/usr/bin/env python3
"""A taskproof adapter around the real learn-claude-code lesson s07 task manager.

It loads `agents/s07_task_system.py` (and, for `claim`, `agents/s11_autonomous_agents.py`)
from a learn-claude-code checkout the user names, imports them the way a user's Python
would, and puts the lesson's own `TaskManager` behind taskproof's adapter protocol
(docs/spec.md §2). No code of the lesson is copied here: every task operation is a call
into the checkout. README.md beside this file says how to get the checkout and what maps.

    LEARN_CLAUDE_CODE_DIR=/path/to/learn-claude-code \\
      taskproof run --target 'cmd:python3 adapters/learn-claude-code/adapter.py' --profile s07

The checkout can also be given as the first argument. The interpreter must be able to
import the lesson's own requirements (`pip install -r requirements.txt`: anthropic,
python-dotenv); nothing is stood in for them. Importing a lesson runs its module-level
code, which builds a model client (no request is made, so no key is needed), reads
`MODEL_ID` (set to a placeholder here when unset: no model is ever called) and creates
`.tasks/` and `.team/` in the working directory: the import therefore runs inside a
temporary directory that is removed right after, so nothing is left outside
`TASKPROOF_ROOT`.

Mapping (layout `s07`: `ROOT/{list}/task_{id}.json`): one `TaskManager(ROOT/{list})` per
list, made the first time this process needs that list (the lesson makes its manager once
per agent process, and the manager's next id is computed then). Everything the lesson has
no method for answers `unsupported`; `hello` lists the rest.
"""

import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

PROTOCOL = 2
NAME = "learn-claude-code-s07"
# The optional parts of the contract the lesson has (docs/spec.md, "Optional parts"): a
# claim, dependencies (given at creation too), one manager per list; no delete, metadata,
# owner or activeForm field, and no way to remove a dependency.
FEATURES = ["claim", "edges", "edges_at_create", "lists"]
LIST_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
WIRE_ID = re.compile(r"(?:0|[1-9][0-9]*)\Z")
MAX_ID = 2**64 - 1
# Set only when the user has not set it: the lessons read it at import and pass it to
# the model client, which this adapter never calls.
MODEL_PLACEHOLDER = "taskproof-adapter-no-model-calls"


class Failure(Exception):
    """A request that fails with one of the error kinds of docs/spec.md §2."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


class LoadError(Exception):
    """The checkout cannot be loaded; the adapter stops with this message."""


# --------------------------------------------------------------------------------------
# Loading the lessons from the checkout.
# --------------------------------------------------------------------------------------


def checkout_dir(argv, environ):
    """The checkout named by the first argument or LEARN_CLAUDE_CODE_DIR."""
    given = argv[1] if len(argv) > 1 else environ.get("LEARN_CLAUDE_CODE_DIR")
    if not given:
        raise LoadError(
            "no learn-claude-code checkout named: set LEARN_CLAUDE_CODE_DIR or pass its path "
            "as the first argument"
        )
    path = Path(given).resolve()
    if not (path / "agents" / "s07_task_system.py").is_file():
        raise LoadError(f"{path} has no agents/s07_task_system.py; is it a learn-claude-code checkout?")
    return path


def import_lesson(path, module_name):
    """Imports one lesson file by path, as `importlib` does for any script.

    The lesson's module-level code creates `.tasks/` (and s11 `.team/`) in the working
    directory; that happens in a temporary directory removed afterwards, so the import
    leaves nothing behind. MODEL_ID is given a placeholder only when unset."""
    os.environ.setdefault("MODEL_ID", MODEL_PLACEHOLDER)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="taskproof-lcc-import-") as scratch:
        os.chdir(scratch)
        try:
            spec.loader.exec_module(module)
        except ModuleNotFoundError as e:
            raise LoadError(
                f"importing {path} needs the Python package {e.name!r}: install the checkout's "
                f"requirements (pip install -r requirements.txt) for this interpreter "
                f"({sys.executable})"
            ) from None
        finally:
            os.chdir(here)
    return module


def checkout_revision(path):
    """The checkout's commit, for `hello`'s version; "unknown" outside a git work tree."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class Lessons:
    """The lesson s07 task manager, one per list, and lesson s11's claim."""

    def __init__(self, root, s07, s11):
        self.root = Path(root)
        self.s07 = s07
        self.s11 = s11
        self.managers = {}

    def folder(self, list_name):
        return self.root / list_name

    def manager(self, list_name, create):
        """The list's TaskManager, made on first use. Without `create`, a list whose folder
        does not exist yet gets None: the constructor would make the folder, and a read
        must not create anything."""
        mgr = self.managers.get(list_name)
        if mgr is None:
            if not create and not os.path.lexists(self.folder(list_name)):
                return None
            mgr = self.s07.TaskManager(self.folder(list_name))
            self.managers[list_name] = mgr
        return mgr

    def create(self, list_name, subject, description, blocked_by, blocks):
        mgr = self.manager(list_name, create=True)
        task = json.loads(mgr.create(subject, description))
        # The lesson's create takes subject and description only; its agent adds edges with
        # a task_update right after, and so does this adapter.
        if blocked_by or blocks:
            task = json.loads(mgr.update(task["id"], None, blocked_by, blocks))
        return task

    def get(self, list_name, task_id):
        mgr = self.manager(list_name, create=False)
        if mgr is None:
            raise Failure("not_found", f"Task {task_id} not found")
        return json.loads(mgr.get(task_id))

    def update(self, list_name, task_id, status, blocked_by, blocks):
        mgr = self.manager(list_name, create=False)
        if mgr is None:
            raise Failure("not_found", f"Task {task_id} not found")
        return json.loads(mgr.update(task_id, status, blocked_by or None, blocks or None))

    def list_tasks(self, list_name):
        """`list_all()` is called for what it does (it fails on a file it cannot read);
        it returns a text summary, so each task it listed is then read with `get()`,
        in the numeric order `list_all()` uses."""
        mgr = self.manager(list_name, create=False)
        if mgr is None:
            return []
        mgr.list_all()
        ids = []
        for f in mgr.dir.glob("task_*.json"):
            n = int(f.stem.split("_")[1])
            if n not in ids:
                ids.append(n)
        return [json.loads(mgr.get(n)) for n in sorted(ids)]

    def claim(self, list_name, task_id, owner):
        """Lesson s11's `claim_task`, pointed at this list's folder through the module's
        TASKS_DIR (the folder it claims in), then the task read back with s07's `get`."""
        self.s11.TASKS_DIR = self.folder(list_name)
        said = self.s11.claim_task(task_id, owner)
        if said.startswith("Error:"):
            kind = "not_found" if "not found" in said else "io"
            raise Failure(kind, said[len("Error:") :].strip())
        return self.get(list_name, task_id)


@contextlib.contextmanager
def store_errors():
    """Turns what the lesson's code raises into error kinds. Order matters:
    JSONDecodeError is a ValueError."""
    try:
        yield
    except Failure:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise Failure("corrupt", f"a task file is not readable JSON: {e}") from None
    except ValueError as e:
        text = str(e)
        if re.fullmatch(r"Task \S+ not found", text):
            raise Failure("not_found", text) from None
        if text.startswith("Invalid status"):
            raise Failure("invalid", f"patch.status: {text}") from None
        raise Failure("corrupt", f"the lesson failed on a task file: {text}") from None
    except (KeyError, TypeError, AttributeError) as e:
        # Only a stored task of another shape reaches these in the lesson's code.
        raise Failure("corrupt", f"the lesson failed on a task file: {type(e).__name__}: {e}") from None
    except OSError as e:
        raise Failure("io", f"{type(e).__name__}: {e}") from None


# --------------------------------------------------------------------------------------
# The protocol boundary: request form checks, id conversion, the line loop.
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
    """A wire id (decimal digits, no leading zero) as the lesson's integer id."""
    if not isinstance(v, str):
        raise invalid(field, f"expected an id string, got {type_name(v)}")
    if not WIRE_ID.match(v) or int(v) > MAX_ID:
        raise invalid(field, f"expected an id of decimal digits without a leading zero, got {v!r}")
    return int(v)


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
    v = obj.get("list")
    if "list" not in obj:
        raise invalid("list", "missing")
    if not isinstance(v, str) or not LIST_NAME.match(v):
        raise invalid("list", f"expected 1 to 64 characters of [A-Za-z0-9_-], got {v!r}")
    return v


def required_id(obj):
    if "id" not in obj:
        raise invalid("id", "missing")
    return wire_id(obj["id"], "id")


def string_field(obj, key, field, nullable):
    v = obj.get(key)
    if v is None:
        if key in obj and not nullable:
            raise invalid(field, "cannot be null")
        return None
    if not isinstance(v, str):
        raise invalid(field, f"expected a string, got {type_name(v)}")
    return v


def deny_unknown(obj, known, prefix):
    for k in obj:
        if k not in known:
            raise invalid(f"{prefix}.{k}", f"unknown field; expected one of {', '.join(known)}")


def unmapped(obj, prefix):
    """The fields of a NEW or PATCH the lesson has no way to set. Asking to leave one unset
    (null, "" or {}) asks for what is already so and is not refused."""
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


def handle_create(store, obj):
    name = list_name(obj)
    new = obj.get("task")
    if not isinstance(new, dict):
        raise invalid("task", f"expected an object, got {type_name(new)}")
    deny_unknown(new, NEW_FIELDS, "task")
    if not isinstance(new.get("subject"), str):
        raise invalid("task.subject", f"expected a string, got {type_name(new.get('subject'))}")
    description = string_field(new, "description", "task.description", nullable=True) or ""
    blocked_by = wire_ids(new.get("blockedBy"), "task.blockedBy")
    blocks = wire_ids(new.get("blocks"), "task.blocks")
    wanted = unmapped(new, "task")
    if wanted:
        raise Failure("unsupported", f"{wanted[0]}: lesson s07's task_create has no such field")
    with store_errors():
        return {"task": to_wire(store.create(name, new["subject"], description, blocked_by, blocks))}


def handle_update(store, obj):
    name = list_name(obj)
    task_id = required_id(obj)
    patch = obj.get("patch")
    if not isinstance(patch, dict):
        raise invalid("patch", f"expected an object, got {type_name(patch)}")
    deny_unknown(patch, PATCH_FIELDS, "patch")
    wanted = []
    for key in ("subject", "description"):
        if string_field(patch, key, f"patch.{key}", nullable=False) is not None:
            wanted.append(f"patch.{key}")
    status = string_field(patch, "status", "patch.status", nullable=False)
    blocked_by = wire_ids(patch.get("addBlockedBy"), "patch.addBlockedBy")
    blocks = wire_ids(patch.get("addBlocks"), "patch.addBlocks")
    wanted += unmapped(patch, "patch")
    for key in ("removeBlockedBy", "removeBlocks"):
        if wire_ids(patch.get(key), f"patch.{key}"):
            wanted.append(f"patch.{key}")
    with store_errors():
        if wanted:
            # A missing task is not_found whatever the patch asks (docs/spec.md §3's order of
            # checks); only an existing task's patch is refused as asking the impossible.
            store.get(name, task_id)
            raise Failure(
                "unsupported",
                f"{wanted[0]}: lesson s07's task_update changes only status and adds edges",
            )
        return {"task": to_wire(store.update(name, task_id, status, blocked_by, blocks))}


def handle(store, obj, version):
    if not isinstance(obj, dict):
        raise invalid("request", f"expected an object, got {type_name(obj)}")
    op = obj.get("op")
    if not isinstance(op, str) or op not in FIELDS:
        raise invalid("op", f"expected one of {', '.join(FIELDS)}, got {op!r}")
    for k in obj:
        if k not in FIELDS[op]:
            raise invalid(k, f"unknown field for {op}; expected {', '.join(FIELDS[op])}")
    if op == "hello":
        return {
            "protocol": PROTOCOL,
            "name": NAME,
            "version": version,
            "layout": "s07",
            "features": FEATURES,
        }
    if op == "create":
        return handle_create(store, obj)
    if op == "update":
        return handle_update(store, obj)
    name = list_name(obj)
    if op == "list":
        with store_errors():
            return {"tasks": [to_wire(t) for t in store.list_tasks(name)], "corrupt": []}
    task_id = required_id(obj)
    if op == "get":
        with store_errors():
            return {"task": to_wire(store.get(name, task_id))}
    if op == "claim":
        owner = obj.get("owner")
        if not isinstance(owner, str) or not owner:
            raise invalid("owner", "expected a non-empty string")
        with store_errors():
            return {"task": to_wire(store.claim(name, task_id, owner))}
    raise Failure("unsupported", "lesson s07's task manager has no delete")


def to_wire(task):
    """The lesson's task as docs/spec.md §1's: string ids, an empty owner left out, every
    other field passed through as stored."""
    if not isinstance(task, dict):
        raise Failure("corrupt", f"a task file holds {type_name(task)}, not a task")
    out = dict(task)
    out["id"] = str(task.get("id"))
    # The lesson returns whatever the file holds; a task the protocol cannot carry (a file
    # written by another program without a subject, or with a status outside the three) is
    # unreadable to the agent as well: corrupt.
    if not isinstance(task.get("subject"), str):
        raise Failure("corrupt", f"task {out['id']}: `subject` is not a string")
    if task.get("status") not in ("pending", "in_progress", "completed"):
        raise Failure("corrupt", f"task {out['id']}: `status` is {task.get('status')!r}")
    for key in ("blocks", "blockedBy"):
        edges = task.get(key) or []
        if not isinstance(edges, list):
            raise Failure("corrupt", f"task {out['id']}: `{key}` is not an array")
        out[key] = sorted({str(e) for e in edges}, key=lambda s: (len(s), s))
    if not task.get("owner"):
        out.pop("owner", None)
    return out


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def answer(store, line, version):
    """The response to one raw request line. Never raises."""
    try:
        try:
            obj = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, RecursionError) as e:
            raise invalid("request", f"not valid JSON: {e}") from None
        return {"ok": True, **handle(store, obj, version)}
    except Failure as f:
        return {"ok": False, "error": {"kind": f.kind, "message": f.message}}
    except Exception as e:  # anything unforeseen is a storage failure, never a crash
        traceback.print_exc(file=sys.stderr)
        return {"ok": False, "error": {"kind": "io", "message": f"{type(e).__name__}: {e}"}}


def load(argv, environ):
    """The store and the version string for `hello`, from the named checkout."""
    root = environ.get("TASKPROOF_ROOT")
    if not root:
        raise LoadError("TASKPROOF_ROOT is not set")
    checkout = checkout_dir(argv, environ)
    s07 = import_lesson(checkout / "agents" / "s07_task_system.py", "lcc_s07_task_system")
    s11 = import_lesson(checkout / "agents" / "s11_autonomous_agents.py", "lcc_s11_autonomous_agents")
    os.makedirs(root, exist_ok=True)
    return Lessons(root, s07, s11), f"git:{checkout_revision(checkout)}"


def main():
    try:
        store, version = load(sys.argv, os.environ)
    except LoadError as e:
        print(f"learn-claude-code adapter: failed to load the lessons: {e}", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        response = answer(store, line.rstrip(b"\r\n"), version)
        try:
            out.write(json.dumps(response, ensure_ascii=True).encode("ascii") + b"\n")
            out.flush()
        except BrokenPipeError:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
