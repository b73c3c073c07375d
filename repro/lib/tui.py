"""Drive an interactive terminal UI (Claude Code's) in a pseudo-terminal, standard library only.

A reproduction that needs the real terminal UI starts the CLI here, reads what it draws,
waits until it takes input, types a prompt or a slash command as a person does (the text,
then Enter once the text shows), and ends it together with everything it started.

    from tui import Tui, Prompter, ready_in, strip_escapes

    with Tui.start(["node", cli_js, "--session-id", sid], env=env, cwd=work) as ui:
        ui.wait_ready(60)                 # the line under the input box is drawn
        mark = ui.mark()
        ui.type("Do step 1.")             # text, wait until it shows, then Enter
        ui.wait_for(lambda t: "Done" in t, 60, since=mark)
        ui.wait_quiet(0.5, 10)            # nothing drawn for 0.5 s: the UI is idle
        before = ui.total
        ui.command("/clear")              # typed as a prompt is
        ui.wait_settled(before, 1.0, 30)  # the UI drew something, then nothing for 1 s
        ui.command("/exit"); ui.wait_exit(30)
    # leaving the block (or ui.end()) sends SIGKILL to the whole process group

API
- ``Tui.start(argv, env=None, cwd=None, rows=50, cols=200, log=None)``: starts ``argv`` in a
  new session (``start_new_session=True``, so it leads its own process group) with a new
  pseudo-terminal of ``rows`` x ``cols`` as stdin, stdout and stderr; a thread reads the
  terminal continuously (a full terminal stalls the CLI). ``log``: a binary file the raw
  output is copied to, or None.
- ``ui.text`` (property): everything drawn so far, escape sequences removed (see
  ``strip_escapes``); ``ui.tail(n)``: its last ``n`` characters; ``ui.mark()``: the current
  length of ``text``, to look only at what was drawn after it (``since=``).
- ``ui.total`` (bytes read so far), ``ui.last_output`` (``time.monotonic()`` of the last read,
  or None).
- ``ui.wait_for(predicate_or_string, timeout, since=0)``: waits until the predicate, given the
  text drawn since ``since``, is true (a string: the text contains it, blanks compared on
  neither side); returns True, or False after ``timeout`` s.
- ``ui.ready(since=0)``: whether the line under the input box (any of ``READY``, blanks left
  out) was drawn since ``since``; ``ui.wait_ready(timeout, since=0)`` waits for it; it raises
  ``TuiError`` when the CLI exits first or the time passes.
- ``ui.wait_quiet(quiet, timeout)``: waits until nothing was drawn for ``quiet`` s (at most
  ``timeout`` s); True when it was quiet.
- ``ui.wait_settled(total_before, quiet=1.0, timeout=30)``: waits until something was drawn
  after ``total_before`` (an earlier ``ui.total``) and then nothing for ``quiet`` s: how the
  end of ``/clear`` or ``/compact`` is seen in versions that do not redraw the line under the
  input box (2.1.112, 2.1.332); True when it settled in time.
- ``ui.type(text, enter=True, echo_wait=3.0)``: writes ``text``, waits up to ``echo_wait`` s
  until it shows on the screen (blanks left out on both sides and the last character, which
  the cursor covers, ignored), waits 0.1 s, then presses Enter (``\\r``). Characters arriving
  together with Enter look like a paste, where Enter is a newline. Returns whether the text
  was seen before Enter. ``ui.command(text)`` is the same for a slash command.
- ``ui.press(data)``: writes raw bytes or text (``"\\r"`` Enter, ``"\\x1b"`` Escape).
- ``ui.alive()``, ``ui.returncode``, ``ui.wait_exit(timeout)``: whether/when the CLI ended.
- ``ui.end()``: SIGKILL to the whole process group (also when the leader already exited, so
  whatever it left behind ends too), reaps the leader, closes the terminal. Idempotent; the
  context manager calls it, and so do ``end_all()``, an ``atexit`` hook and handlers for
  SIGTERM, SIGINT and SIGHUP installed at the first start (they then call the handler that
  was there before, e.g. the one of ``claude.py``).

``Prompter(ui)`` adapts a ``Tui`` to a turn-by-turn scripted agent written for a print-mode CLI
(``send_user(text)``, ``alive()``, ``tail()``, ``proc.returncode``; e.g. ``claude.Script.turn``):
``send_user`` waits until the UI was quiet for 0.3 s, then types the text and Enter.

Claude Code's terminal UI with the task tools (imports ``claude.py`` of this folder, lazily)
- ``TaskUi(version, root, task_list=None)``: config folder ``root/config`` (HOME and
  CLAUDE_CONFIG_DIR, so lists are ``root/config/tasks/LIST``), working folder
  ``root/config/work``, first-run answers, ``claude.make_env`` + CLAUDE_CODE_ENABLE_TASKS=1,
  CLAUDE_CODE_ENABLE_TODO_TOOLS=1, TERM=xterm-256color (+ CLAUDE_CODE_TASK_LIST_ID when
  ``task_list`` is given), a ``claude.FakeModel`` driven by a ``claude.Script`` that also
  answers the ``/compact`` summary request (``is_compaction(body)``) with ``SUMMARY``.
  ``.start(extra_args=())`` (e.g. ``["--resume", sid]``, ``["--continue"]``) starts the UI and
  waits for its input box; ``.turn(calls)`` types "Do repro step N." and answers it with the
  calls, returning ``[(is_error, text)]``; ``.slash("/clear" | "/compact")`` types it and waits
  until the UI settled (and the summary was answered); ``.exit()`` types ``/exit`` and says
  whether the CLI ended by itself within 30 s; ``.session_ids()`` (from the requests'
  ``metadata.user_id``), ``.transcripts()`` ({stem of projects/*/*.jsonl: [sessionId of its
  lines]}), ``.tasks`` (the tasks folder), ``.model.log``, ``.close()``.
- ``folder_state(path)`` -> ``{name: (size, mtime_ns, text or None)}`` of a folder's entries.

``READY`` lists what Claude Code's UI draws under its input box once it takes input, blanks
left out: ``? for shortcuts`` (2.1.17; 2.1.112 draws it as ``?forshortcuts``; 2.1.211 at
start), ``⏵⏵ auto mode on (shift+tab to cycle)`` (2.1.332), ``⏸ manual mode on · …`` (2.1.211
after a turn). ``ready_in(text)`` says whether a text shows one of them.
"""

import atexit
import codecs
import fcntl
import json
import os
import re
import signal
import stat
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

READY = ("forshortcuts", "shift+tabtocycle", "modeon·")

# CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \), and two-byte escapes.
_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x1b.")


def _unfinished(seq):
    """Whether ``seq`` (starting with ESC, running to the end of what was read) is an escape
    sequence whose end has not arrived yet."""
    if len(seq) == 1:
        return True
    if seq[1:2] == b"[":
        return re.match(rb"\x1b\[[0-?]*[ -/]*[@-~]", seq) is None
    if seq[1:2] == b"]":
        return b"\x07" not in seq and b"\x1b\\" not in seq[1:]
    return False


_LIVE = []
_HOOKED = [False]


def end_all():
    """Ends every Tui of this process that is still running (atexit and on SIGTERM, SIGINT,
    SIGHUP)."""
    for ui in list(_LIVE):
        try:
            ui.end()
        except Exception:  # noqa: BLE001
            pass


def _hook():
    # Installed at the first start, so that it wraps whatever handler the script (or another
    # helper) installed before: the terminal UIs end first, then that handler runs.
    if _HOOKED[0]:
        return
    _HOOKED[0] = True
    atexit.register(end_all)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            previous = signal.getsignal(signum)
        except (ValueError, OSError):
            continue

        def handler(n, frame, previous=previous):
            end_all()
            if callable(previous):
                previous(n, frame)
            elif previous != signal.SIG_IGN:
                signal.signal(n, signal.SIG_DFL)
                os.kill(os.getpid(), n)

        try:
            signal.signal(signum, handler)
        except (ValueError, OSError):
            pass


class TuiError(Exception):
    """The CLI ended, or did not draw what was awaited in time."""


def strip_escapes(data):
    """Terminal output (bytes) without its control sequences, as text."""
    return _ESCAPES.sub(b"", data).decode("utf-8", "replace")


def _compact(text):
    return "".join(text.split())


def ready_in(text):
    """Whether ``text`` shows the line under Claude Code's input box (any version measured)."""
    c = _compact(text)
    return any(r in c for r in READY)


class Tui:
    def __init__(self, proc, master, log):
        self.proc = proc
        self._master = master
        self._log = log
        self._lock = threading.Lock()
        self._closed = False
        self._exit_status = None
        self._text = []
        self._len = 0
        self.total = 0
        self.last_output = None
        self._ended = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, argv, env=None, cwd=None, rows=50, cols=200, log=None):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        try:
            proc = subprocess.Popen(
                argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=env,
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            os.close(master)
            os.close(slave)
            raise
        os.close(slave)
        ui = cls(proc, master, log)
        _LIVE.append(ui)
        _hook()
        return ui

    # reading

    def _read(self):
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = b""
        while True:
            try:
                data = os.read(self._master, 65536)
            except OSError:
                data = b""
            if not data:
                with self._lock:
                    self._closed = True
                return
            if self._log is not None:
                try:
                    self._log.write(data)
                    self._log.flush()
                except (OSError, ValueError):
                    pass
            raw = pending + data
            # An escape sequence may straddle two reads: hold an unfinished one back.
            cut = raw.rfind(b"\x1b")
            if cut != -1 and len(raw) - cut < 4096 and _unfinished(raw[cut:]):
                raw, pending = raw[:cut], raw[cut:]
            else:
                pending = b""
            piece = decoder.decode(_ESCAPES.sub(b"", raw))
            with self._lock:
                self._text.append(piece)
                self._len += len(piece)
                self.total += len(data)
                self.last_output = time.monotonic()

    @property
    def text(self):
        with self._lock:
            if len(self._text) > 1:
                self._text = ["".join(self._text)]
            return self._text[0] if self._text else ""

    def tail(self, n=2000):
        return self.text[-n:]

    def mark(self):
        with self._lock:
            return self._len

    def since(self, mark):
        return self.text[mark:]

    # waiting

    def wait_for(self, what, timeout, since=0):
        if isinstance(what, str):
            want = _compact(what)
            pred = lambda t: want in _compact(t)  # noqa: E731
        else:
            pred = what
        deadline = time.monotonic() + timeout
        while True:
            if pred(self.since(since)):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def ready(self, since=0):
        return ready_in(self.since(since))

    def wait_ready(self, timeout, since=0):
        deadline = time.monotonic() + timeout
        while not self.ready(since):
            if not self.alive():
                raise TuiError(f"the CLI exited ({self.returncode}) before its input box showed; "
                               f"it drew: {_compact(self.tail(600))!r}")
            if time.monotonic() >= deadline:
                raise TuiError(f"no input box within {timeout} s; the screen ends with: "
                               f"{_compact(self.tail(600))!r}")
            time.sleep(0.05)

    def wait_quiet(self, quiet, timeout):
        deadline = time.monotonic() + timeout
        while True:
            last = self.last_output
            now = time.monotonic()
            if last is None or now - last >= quiet:
                return True
            if now >= deadline:
                return False
            time.sleep(0.02)

    def wait_settled(self, total_before, quiet=1.0, timeout=30.0):
        """Waits until something was drawn after ``total_before`` (a value of ``ui.total``) and
        then nothing for ``quiet`` s: a command was acted on and the UI is idle again. Not every
        version redraws the line under its input box after ``/clear`` or ``/compact`` (2.1.112
        and 2.1.332 draw their task panel there), so this is how their end is seen. True when
        it settled within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.last_output
            if self.total > total_before and last is not None and time.monotonic() - last >= quiet:
                return True
            if not self.alive():
                return self.total > total_before
            time.sleep(0.05)
        return False

    # writing

    def press(self, data):
        if isinstance(data, str):
            data = data.encode()
        os.write(self._master, data)

    def type(self, text, enter=True, echo_wait=3.0):
        mark = self.mark()
        self.press(text)
        probe = _compact(text)[:-1]
        seen = self.wait_for(lambda t: probe in _compact(t), echo_wait, since=mark) if probe else True
        time.sleep(0.1)
        if enter:
            self.press("\r")
        return seen

    def command(self, text, echo_wait=3.0):
        return self.type(text, enter=True, echo_wait=echo_wait)

    # ending

    def _peek(self):
        """The leader's exit status if it ended, without reaping it: until ``end()`` its pid
        stays taken, so the process group id can name no other process."""
        if self._exit_status is None:
            try:
                info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                info = None
                if self.proc.returncode is not None:
                    self._exit_status = self.proc.returncode
            if info is not None:
                code = info.si_status
                self._exit_status = code if info.si_code == os.CLD_EXITED else -code
        return self._exit_status

    def alive(self):
        return self._peek() is None

    @property
    def returncode(self):
        return self._peek()

    def wait_exit(self, timeout):
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def end(self):
        """SIGKILL to the whole process group, then reap the leader and close the terminal."""
        if self._ended:
            return
        self._ended = True
        if self in _LIVE:
            _LIVE.remove(self)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.close(self._master)
        except OSError:
            pass
        self._reader.join(2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.end()
        return False

    def __del__(self):
        try:
            self.end()
        except Exception:
            pass


class Prompter:
    """Lets a turn-by-turn scripted agent written for a print-mode CLI (an object with
    ``send_user(text)``, ``alive()``, ``tail()`` and ``proc.returncode``, such as
    ``claude.Script.turn`` expects) drive a terminal UI instead: ``send_user`` waits until the
    UI was quiet for 0.3 s (at most 5 s: a prompt typed while the UI still finishes a turn can
    stick in its queue), then types the text and presses Enter once it shows."""

    class _Proc:
        def __init__(self, ui):
            self._ui = ui

        @property
        def returncode(self):
            return self._ui.returncode

        @property
        def pid(self):
            return self._ui.proc.pid

    def __init__(self, ui):
        self.ui = ui
        self.proc = Prompter._Proc(ui)

    def send_user(self, text):
        if not self.ui.alive():
            raise TuiError(f"the CLI exited ({self.ui.returncode}) before the prompt was typed")
        self.ui.wait_quiet(0.3, 5)
        self.ui.type(text)

    def alive(self):
        return self.ui.alive()

    def tail(self, n=1500):
        return "screen: …" + _compact(self.ui.tail(4 * n))[-n:]


# ---------------------------------------------------------------- Claude Code's terminal UI

TASK_TOOLS = "TaskCreate,TaskUpdate,TaskList,TaskGet"
SUMMARY = ("<analysis>The user asked for numbered repro steps; the task tools were used.</analysis>\n"
           "<summary>1. Primary Request and Intent: run the numbered repro steps.\n"
           "2. Pending Tasks: see TaskList.\n3. Current Work: waiting for the next step.</summary>")


def is_compaction(body):
    """Whether a Messages API request is Claude Code asking for the summary of ``/compact``:
    its last user message says "create a detailed summary of the conversation" (2.1.17, sent
    with the tool Read only, from the summarising system prompt) or "Respond with TEXT ONLY"
    (2.1.112 and later, sent with the agent's own tools and system prompt)."""
    msgs = [m for m in (body or {}).get("messages") or [] if isinstance(m, dict) and m.get("role") != "system"]
    if not msgs or msgs[-1].get("role") != "user":
        return False
    c = msgs[-1].get("content")
    texts = [c] if isinstance(c, str) else [b.get("text") or "" for b in c or [] if isinstance(b, dict)]
    return any("create a detailed summary of the conversation" in t or "Respond with TEXT ONLY" in t
               for t in texts)


class TaskUi:
    """Claude Code's terminal UI with the task tools on, driven by a scripted model (uses
    ``claude.py`` of this folder: install, first-run answers, environment, fake Messages API,
    ``Script``). Everything lives under ``root``: ``root/config`` is HOME and
    CLAUDE_CONFIG_DIR (so the lists are ``root/config/tasks/LIST``), ``root/config/work`` the
    working folder.

        ui = TaskUi(version, root, task_list=None)   # None: the session's own list
        ui.start(extra_args=())                      # e.g. ["--resume", sid] or ["--continue"]
        ui.turn([("TaskCreate", {...})])             # one prompt, the calls, their results
        ui.slash("/clear")                           # typed; waits until the UI settles
        ui.slash("/compact")                         # also waits for the summary request
        ui.exit()                                    # /exit; True when the CLI ended by itself
        ui.session_ids()                             # from the requests' metadata.user_id
        ui.transcripts()                             # names of projects/*/*.jsonl
        ui.close()                                   # ends the UI's group and the model

    The environment is ``claude.make_env`` plus CLAUDE_CODE_ENABLE_TASKS=1,
    CLAUDE_CODE_ENABLE_TODO_TOOLS=1 and TERM=xterm-256color (and CLAUDE_CODE_TASK_LIST_ID when
    ``task_list`` is given); the CLI gets ``--allowedTools TaskCreate,TaskUpdate,TaskList,
    TaskGet``. The compaction request (see ``is_compaction``) is answered with ``SUMMARY``
    (an ``<analysis>`` and a ``<summary>`` block), every other request as ``claude.Script``
    and ``claude.FakeModel`` do. ``.model.log`` keeps every request."""

    def __init__(self, version, root, task_list=None, start_timeout=90.0, turn_timeout=60.0):
        import claude  # the helper of this folder; imported here so the rest of tui needs none

        self.C = claude
        self.version = version
        self.root = Path(root)
        self.config = self.root / "config"
        self.work = self.config / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.work = self.work.resolve()
        self.tasks = self.config / "tasks"
        claude.make_config(self.config, self.work)
        self.script = claude.Script()
        self.compactions = 0
        self.model = claude.FakeModel(self._agent, agent_tools=tuple(claude.AGENT_TOOLS) + ("Read",))
        extra = {"CLAUDE_CODE_ENABLE_TASKS": "1", "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
                 "TERM": "xterm-256color"}
        self.env = claude.make_env(self.config, self.model.base_url, task_list=task_list, extra=extra)
        self.argv = claude.claude_command(version) + ["--allowedTools", TASK_TOOLS]
        self.start_timeout = start_timeout
        self.turn_timeout = turn_timeout
        self.ui = None

    def _agent(self, body, n):
        if is_compaction(body):
            self.compactions += 1
            return [{"type": "text", "text": SUMMARY}]
        return self.script.agent(body, n)

    def start(self, extra_args=()):
        if self.ui is not None:
            self.ui.end()
        self.ui = Tui.start(self.argv + list(extra_args), env=self.env, cwd=str(self.work))
        try:
            self.ui.wait_ready(self.start_timeout)
        except TuiError as e:
            raise self.C.CouldNotRun(f"Claude Code {self.version}: {e}") from e
        return self.ui

    def turn(self, calls):
        try:
            results = self.script.turn(Prompter(self.ui), calls, self.turn_timeout)
        except TuiError as e:
            raise self.C.CouldNotRun(str(e)) from e
        self.ui.wait_quiet(0.7, 10)
        return results

    def slash(self, command, timeout=60.0):
        """Types a slash command and waits until the UI drew something and was then quiet for
        1 s (and, for /compact, until the summary was asked for and answered). Returns the
        seconds it took; raises CouldNotRun when it did not settle in ``timeout`` s."""
        self.ui.wait_quiet(0.3, 5)
        before, asked = self.ui.total, self.compactions
        t0 = time.monotonic()
        self.ui.command(command)
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise self.C.CouldNotRun(f"{command} did not settle within {timeout} s; "
                                         f"screen: {_compact(self.ui.tail(800))[-400:]!r}")
            if self.ui.wait_settled(before, 1.0, min(left, 2.0)) and (
                    command != "/compact" or self.compactions > asked):
                return time.monotonic() - t0
            if not self.ui.alive():
                raise self.C.CouldNotRun(f"the CLI exited ({self.ui.returncode}) after {command}")

    def exit(self, timeout=30.0):
        self.ui.wait_quiet(0.3, 5)
        self.ui.command("/exit")
        ended = self.ui.wait_exit(timeout)
        self.ui.end()
        return ended

    def session_ids(self):
        """The session ids the CLI named in its requests (``metadata.user_id``: a JSON object
        with ``session_id`` from about 2.1.100 on, ``user_…_account__session_ID`` before), in
        the order first seen."""
        out = []
        for e in list(self.model.log):
            uid = ((e.get("body") or {}).get("metadata") or {}).get("user_id") or ""
            sid = None
            try:
                sid = json.loads(uid).get("session_id")
            except (ValueError, AttributeError):
                if "_session_" in uid:
                    sid = uid.rsplit("_session_", 1)[1]
            if sid and sid not in out:
                out.append(sid)
        return out

    def transcripts(self):
        """The transcript files (names without .jsonl) under the config's projects/ folder, and
        for each the session ids its lines carry."""
        out = {}
        for p in sorted((self.config / "projects").glob("*/*.jsonl")):
            ids = set()
            try:
                for line in p.read_text().splitlines():
                    try:
                        sid = json.loads(line).get("sessionId")
                    except (ValueError, AttributeError):
                        continue
                    if sid:
                        ids.add(sid)
            except OSError:
                pass
            out[p.stem] = sorted(ids)
        return out

    def close(self):
        if self.ui is not None:
            self.ui.end()
        self.model.close()


def folder_state(path):
    """{name: (size, mtime_ns, text or None)} of the entries of a folder (no recursion; text
    for files under 4 KB), {} when it does not exist."""
    out = {}
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return out
    for n in names:
        p = os.path.join(path, n)
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        text = None
        if stat.S_ISREG(st.st_mode) and st.st_size < 4096:
            try:
                with open(p, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                pass
        out[n] = (st.st_size, st.st_mtime_ns, text)
    return out


def task_files(folder):
    """The task files (`N.json`) of a list folder, sorted; [] when the folder does not exist."""
    try:
        return sorted(n for n in os.listdir(folder) if re.fullmatch(r"\d+\.json", n))
    except FileNotFoundError:
        return []
