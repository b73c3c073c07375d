"""Independent helpers for reproducing claims about the real Claude Code CLI.

Python 3.11 standard library only; shares no code with taskproof (repro/README.md).

API
---
Installing and finding the CLI
    cache_dir() -> Path
        $TASKPROOF_CLAUDE_CODE_CACHE, else $XDG_CACHE_HOME/taskproof/claude-code, else
        ~/.cache/taskproof/claude-code.
    install(version) -> Path
        Installs @anthropic-ai/claude-code@VERSION with npm into CACHE/VERSION (npm runs in
        CACHE/.installing-VERSION-PID, renamed into place on success, under an exclusive
        fcntl.flock on CACHE/.lock); reuses a complete folder. Raises CouldNotRun.
    executable(version_dir) -> list[str]
        The argv prefix that starts it: ["node", ".../cli.js"] (versions up to ~2.1.112) or
        [".../claude-code-linux-x64/claude"] (the native binary of the platform package).
    claude_command(version) -> list[str]        install() + executable()

First run, environment
    API_KEY                                      a dummy key (never checked by the fake model)
    make_config(config_dir, cwd, key=API_KEY)    writes config_dir/.claude.json with the
                                                 first-run answers (onboarding done, key
                                                 approved by its last 20 chars, cwd trusted)
    make_env(config_dir, base_url, task_list=None, background=False, extra=None) -> dict
        env cleared, then HOME = CLAUDE_CONFIG_DIR = config_dir, ANTHROPIC_BASE_URL,
        ANTHROPIC_API_KEY, ENABLE_TOOL_SEARCH=false, CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION=false,
        DISABLE_TELEMETRY/ERROR_REPORTING/AUTOUPDATER/BUG_COMMAND=1,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, LANG=C.UTF-8, PATH inherited;
        task_list=NAME adds CLAUDE_CODE_TASK_LIST_ID, CLAUDE_CODE_ENABLE_TASKS=1,
        CLAUDE_CODE_ENABLE_TODO_TOOLS=1; background=True adds CLAUDE_CODE_TMPDIR and TMPDIR =
        config_dir/tmp (created). `extra` (e.g. {"TERM": "xterm-256color"}) is added last.

The fake Anthropic Messages API
    FakeModel(agent, agent_tools=AGENT_TOOLS, side_text="OK")
        A threaded http.server on 127.0.0.1:random. POST /v1/messages answers JSON, or an SSE
        stream when the body has "stream": true; POST /v1/messages/count_tokens answers
        {"input_tokens": 1}; anything else 404. A request whose `tools` names none of
        `agent_tools` (default: Bash and the task tools) is a side request (title, topic,
        prefix, summary of the small model) and gets `side_text`. Every other request goes to
        `agent(body, n)` (n = the agent request's number, from 1), which returns a list of
        content blocks (use text_block / tool_use_block), or None for [text "Done."]; a
        tool_use block makes stop_reason "tool_use", else "end_turn". The callback may block.
        .base_url, .log (list of dicts: n, kind "agent"|"side"|"count", t (monotonic),
        wall (time.time()), body, answer), .agent_bodies(), .close().
    text_block(text), tool_use_block(id, name, input)

Driving a CLI in print mode
    Cli(argv_prefix, cwd, env, allowed_tools, permission_mode="default", extra_args=())
        starts `... -p --verbose --input-format stream-json --output-format stream-json
        --allowedTools A,B --permission-mode MODE` in a process group of its own (stdin, stdout,
        stderr piped; stdout lines parsed as JSON events into .events, stderr kept in
        .stderr_text). .send_user(text), .close_input(), .wait_exit(timeout) -> returncode or
        None, .alive(), .kill() (SIGKILL to the whole group), .sigkill_leader() (SIGKILL to the
        CLI's own pid only), .pid, .events_of(type, subtype=None). Every Cli is registered and
        killed (group) at interpreter exit and on SIGTERM/SIGINT/SIGHUP.

Turn-by-turn scripting (a ready-made `agent` callback)
    Script()                       pass script.agent to FakeModel(agent=...)
        script.turn(cli, calls, timeout) -> list[(is_error, text)]
            sends the user message "Do repro step N." and answers that prompt (the last
            non-system message is a user message holding the marker) with one tool_use block
            per call (call = (name, input)); once a request's last user message holds every
            tool_result, the results go back and the turn ends with "Done.". calls=[] ends
            the turn at once. Raises CouldNotRun on timeout or if the CLI exited.
        script.tools                the tools array of the first agent request
        script.tool_names()
        script.on_request = f(n, body)   called first for every agent request (e.g. ledger.add)
        script.on_prompt = f(k)          called when step k's prompt is answered with its calls
    last_turn_message(body)        the last message whose role is not "system"
    result_text(content)           a tool_result's content as text

Ready-made sessions (see their docstrings)
    BgSession(version)             print-mode CLI + scripted model for background Bash tasks:
                                   .spawn(commands), .kill(ids), .output(id, block), .ping(),
                                   .ledger (NotificationLedger), .wait_notified(ids, s),
                                   .stream_notes(), .procs(), .output_tool, .kill_tool, .close()
    TaskSession(version, root, list_name)
                                   print-mode CLI on a named task list whose files are
                                   ROOT/LIST/ID.json (config/tasks links to ROOT): .call(name,
                                   input), .calls([...]), .create(subject), .restart(),
                                   .files(), .close()
    parse_bg_started(text) -> (id, output_file)

Notifications (<task-notification>) seen by the model
    message_texts(message) -> list[(where, text)]
        every text of one message of any role: string content ("string"), text blocks
        ("text"), tool_result content strings or block arrays ("tool_result").
    notification_blocks(messages) -> list[dict(pos, role, where, text, id, status)]
        every <task-notification>...</task-notification> in every message, in order.
    NotificationLedger()
        .add(request_n, body)  records one agent request's conversation
        .per_id() -> {task_id: max number of blocks with that id in any single request's
            conversation}   (1 = delivered once; robust to retries and merged messages)
        .first_seen() -> {task_id: (request_n, role, where)}
        .growth_new() -> list of blocks counted by the growing conversation (blocks past
            the count of the previous request), with request numbers; .shrunk -> notes
        .roles() -> Counter of (role, where) of the first sighting of each id

Processes
    procs_with_marker(marker) -> list[(pid, pgid, cmdline)]   live processes whose environ or
        cmdline carries `marker` (zombies left out)
    kill_marked(marker, within=10)          SIGKILL them until none is left
    register_marker(marker)                 kill_marked at exit and on signals
    temp_dir(prefix) -> Path                a temporary folder removed at exit (cleanup())
    cleanup()                               kills every Cli group and marked process, removes
                                            the temporary folders (atexit, SIGTERM/INT/HUP)

Reporting (the repro protocol)
    parse_args(default_version) -> argparse.Namespace with .version (and .runs)
    log(*args)                       to stderr, flushed, with a timestamp
    loadavg() -> "a b c"             the three numbers of /proc/loadavg
    finish(version, answer, observed, **more)   prints the JSON line, exits 0
    could_not_run(version, error)               prints the JSON line, exits 2
    CouldNotRun                      exception; run_main(fn, version) turns it into exit 2
"""

from __future__ import annotations

import argparse
import atexit
import collections
import fcntl
import http.server
import json
import os
import platform
import re
import shutil
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PACKAGE = "@anthropic-ai/claude-code"
API_KEY = "sk-ant-api03-repro-" + "0" * 40
AGENT_TOOLS = ("Bash", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet")


class CouldNotRun(Exception):
    """The product did not install or start, or a limit passed: exit 2."""


# ---------------------------------------------------------------- reporting

_T0 = time.monotonic()


def log(*args):
    print(f"[{time.monotonic() - _T0:8.2f}]", *args, file=sys.stderr, flush=True)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def parse_args(default_version: str, runs: int | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--version", default=default_version)
    if runs is not None:
        p.add_argument("--runs", type=int, default=runs)
    p.add_argument("--keep", action="store_true", help="keep the temporary folders")
    return p.parse_args()


def finish(version, answer, observed, **more):
    cleanup()
    out = {"version": version, "answer": bool(answer), "observed": observed}
    out.update(more)
    print(json.dumps(out), flush=True)
    sys.exit(0)


def could_not_run(version, error):
    cleanup()
    print(json.dumps({"version": version, "answer": None, "error": str(error)}), flush=True)
    sys.exit(2)


def run_main(fn, version):
    """Runs fn(); a CouldNotRun (or any unexpected error) is answered with exit 2."""
    try:
        fn()
    except CouldNotRun as e:
        could_not_run(version, e)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - the protocol wants exit 2 for anything
        import traceback

        traceback.print_exc(file=sys.stderr)
        could_not_run(version, f"{type(e).__name__}: {e}")


# ---------------------------------------------------------------- install


def cache_dir() -> Path:
    v = os.environ.get("TASKPROOF_CLAUDE_CODE_CACHE")
    if v:
        return Path(v)
    v = os.environ.get("XDG_CACHE_HOME")
    if v:
        return Path(v) / "taskproof" / "claude-code"
    return Path.home() / ".cache" / "taskproof" / "claude-code"


_VERSION_RE = re.compile(r"^[0-9][0-9A-Za-z.+-]{0,63}$")


def _native_candidates(modules: Path) -> list[Path]:
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
    scope = modules / "@anthropic-ai"
    first = [scope / f"claude-code-linux-{arch}" / "claude", scope / f"claude-code-linux-{arch}-musl" / "claude"]
    rest = sorted(scope.glob("claude-code-linux-*/claude")) if scope.is_dir() else []
    return first + [p for p in rest if p not in first]


def executable(version_dir: Path) -> list[str]:
    modules = Path(version_dir) / "node_modules"
    cli = modules / "@anthropic-ai" / "claude-code" / "cli.js"
    if cli.is_file():
        return ["node", str(cli)]
    for p in _native_candidates(modules):
        if p.is_file() and os.access(p, os.X_OK):
            return [str(p)]
    exe = modules / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
    if exe.is_file():
        with open(exe, "rb") as f:
            if f.read(4) == b"\x7fELF":
                return [str(exe)]
    raise CouldNotRun(f"no cli.js nor native claude executable under {modules}")


def install(version: str) -> Path:
    if not _VERSION_RE.match(version):
        raise CouldNotRun(f"not a version number: {version!r}")
    cache = cache_dir()
    final = cache / version
    if final.is_dir():
        executable(final)
        return final
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.is_dir():
            executable(final)
            return final
        staging = cache / f".installing-{version}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        (staging / "package.json").write_text('{"private": true}\n')
        env = dict(os.environ, NO_UPDATE_NOTIFIER="1", npm_config_update_notifier="false",
                   npm_config_fund="false", npm_config_audit="false")
        log(f"npm install {PACKAGE}@{version} into {staging}")
        t = time.monotonic()
        try:
            r = subprocess.run(["npm", "install", "--no-save", "--loglevel=error", f"{PACKAGE}@{version}"],
                               cwd=staging, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as e:
            shutil.rmtree(staging, ignore_errors=True)
            raise CouldNotRun(f"npm install {PACKAGE}@{version}: {e}") from e
        if r.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise CouldNotRun(f"npm install {PACKAGE}@{version} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        try:
            executable(staging)
        except CouldNotRun:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        os.rename(staging, final)
        log(f"installed {version} in {time.monotonic() - t:.1f} s")
    return final


def claude_command(version: str) -> list[str]:
    return executable(install(version))


# ---------------------------------------------------------------- config, env


def make_config(config_dir, cwd, key: str = API_KEY) -> Path:
    config_dir = Path(config_dir)
    config_dir.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "projects": {str(cwd): {"hasTrustDialogAccepted": True, "allowedTools": []}},
    }
    path = config_dir / ".claude.json"
    path.write_text(json.dumps(state, indent=2) + "\n")
    return path


def make_env(config_dir, base_url: str, task_list: str | None = None, background: bool = False,
             extra: dict | None = None, key: str = API_KEY) -> dict:
    config_dir = str(config_dir)
    env = {
        "HOME": config_dir,
        "CLAUDE_CONFIG_DIR": config_dir,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": key,
        "ENABLE_TOOL_SEARCH": "false",
        "CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION": "false",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "LANG": "C.UTF-8",
    }
    if os.environ.get("PATH"):
        env["PATH"] = os.environ["PATH"]
    if task_list is not None:
        env.update({"CLAUDE_CODE_TASK_LIST_ID": task_list, "CLAUDE_CODE_ENABLE_TASKS": "1",
                    "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"})
    if background:
        tmp = Path(config_dir) / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env["CLAUDE_CODE_TMPDIR"] = str(tmp)
        env["TMPDIR"] = str(tmp)
    if extra:
        env.update(extra)
    return env


# ---------------------------------------------------------------- fake model


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def tool_use_block(id: str, name: str, input: dict) -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


_msg_counter = [0]
_msg_lock = threading.Lock()


def _message(model: str, content: list) -> dict:
    with _msg_lock:
        _msg_counter[0] += 1
        n = _msg_counter[0]
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
    return {"id": f"msg_repro_{os.getpid()}_{n}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def _sse(message: dict) -> bytes:
    out = []

    def ev(name, data):
        out.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")

    start = dict(message, content=[], stop_reason=None)
    ev("message_start", {"type": "message_start", "message": start})
    for i, b in enumerate(message["content"]):
        if b["type"] == "tool_use":
            first = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
        else:
            first = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": b["text"]}
        ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": first})
        ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
        ev("content_block_stop", {"type": "content_block_stop", "index": i})
    ev("message_delta", {"type": "message_delta",
                         "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                         "usage": {"output_tokens": 1}})
    ev("message_stop", {"type": "message_stop"})
    return "".join(out).encode()


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # the CLI drops connections when it is killed or retries; not worth a traceback


class FakeModel:
    def __init__(self, agent, agent_tools=AGENT_TOOLS, side_text: str = "OK"):
        self.agent = agent
        self.agent_tools = set(agent_tools)
        self.side_text = side_text
        self.log: list[dict] = []
        self._lock = threading.Lock()
        self._agent_n = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    data = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return data
                        data += self.rfile.read(size)
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _send(self, code: int, body: bytes, ctype: str):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def do_GET(self):
                self._send(404, b"{}", "application/json")

            def do_POST(self):
                raw = self._body()
                path = self.path.split("?")[0]
                try:
                    outer._post(self, path, raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _post(self, h, path, raw):
        now, wall = time.monotonic(), time.time()
        if path == "/v1/messages/count_tokens":
            with self._lock:
                self.log.append({"n": None, "kind": "count", "t": now, "wall": wall, "body": None, "answer": None})
            h._send(200, b'{"input_tokens": 1}', "application/json")
            return
        if path != "/v1/messages":
            h._send(404, b"{}", "application/json")
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            h._send(400, b'{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}',
                    "application/json")
            return
        names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        model = body.get("model") or "claude"
        if names & self.agent_tools:
            with self._lock:
                self._agent_n += 1
                n = self._agent_n
            try:
                content = self.agent(body, n)
            except Exception as e:  # noqa: BLE001
                log(f"agent callback failed on request {n}: {e!r}")
                content = None
            if not content:
                content = [text_block("Done.")]
            kind = "agent"
        else:
            n = None
            content = [text_block(self.side_text)]
            kind = "side"
        with self._lock:
            self.log.append({"n": n, "kind": kind, "t": now, "wall": wall, "body": body, "answer": content})
        msg = _message(model, content)
        if body.get("stream"):
            h._send(200, _sse(msg), "text/event-stream")
        else:
            h._send(200, json.dumps(msg).encode(), "application/json")

    def agent_bodies(self) -> list[tuple[int, dict]]:
        with self._lock:
            return [(e["n"], e["body"]) for e in self.log if e["kind"] == "agent"]

    def close(self):
        try:
            self._server.shutdown()
            self._server.server_close()
        except Exception:  # noqa: BLE001
            pass


# ---------------------------------------------------------------- the CLI

_CLIS: list["Cli"] = []
_MARKERS: list[str] = []
_TEMPS: list[str] = []
_cleaned = [False]


class Cli:
    def __init__(self, argv_prefix, cwd, env, allowed_tools=(), permission_mode="default", extra_args=()):
        args = list(argv_prefix) + ["-p", "--verbose", "--input-format", "stream-json",
                                    "--output-format", "stream-json"]
        if allowed_tools:
            args += ["--allowedTools", ",".join(allowed_tools)]
        if permission_mode:
            args += ["--permission-mode", permission_mode]
        args += list(extra_args)
        self.events: list[dict] = []
        self.event_times: list[float] = []
        self.stderr_text = ""
        self._lock = threading.Lock()
        try:
            self.proc = subprocess.Popen(args, cwd=str(cwd), env=env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0)
        except OSError as e:
            raise CouldNotRun(f"start {args[0]}: {e}") from e
        self.pid = self.proc.pid
        _CLIS.append(self)
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self):
        for line in self.proc.stdout:
            line = line.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"type": "_raw", "line": line}
            with self._lock:
                self.events.append(ev)
                self.event_times.append(time.monotonic())

    def _read_err(self):
        for chunk in iter(lambda: self.proc.stderr.read1(8192), b""):
            with self._lock:
                self.stderr_text = (self.stderr_text + chunk.decode("utf-8", "replace"))[-65536:]

    def send_user(self, text):
        line = json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as e:
            raise CouldNotRun(f"the CLI's input is closed: {e}") from e

    def close_input(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def sigkill_leader(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def events_of(self, type_, subtype=None):
        with self._lock:
            return [e for e in self.events if e.get("type") == type_ and (subtype is None or e.get("subtype") == subtype)]

    def tail(self, n=1500):
        with self._lock:
            out = "\n".join(json.dumps(e)[:300] for e in self.events[-5:])
            return f"stderr: …{self.stderr_text[-n:]}\nstdout: …{out[-n:]}"


# ---------------------------------------------------------------- processes


def procs_with_marker(marker: str) -> list[tuple[int, int, str]]:
    found = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    envtext = f.read().decode("utf-8", "replace")
            except OSError:
                envtext = ""
            if marker not in cmd and marker not in envtext:
                continue
            stat = Path(f"/proc/{pid}/stat").read_text()
            rest = stat.rsplit(")", 1)[1].split()
            state, pgid = rest[0], int(rest[2])
        except (OSError, IndexError, ValueError):
            continue
        if state in ("Z", "X"):
            continue
        found.append((pid, pgid, cmd.strip()))
    return found


def kill_marked(marker: str, within: float = 10.0) -> int:
    killed = set()
    deadline = time.monotonic() + within
    while True:
        left = procs_with_marker(marker)
        if not left or time.monotonic() >= deadline:
            return len(killed)
        for pid, _, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


def register_marker(marker: str):
    _MARKERS.append(marker)


def temp_dir(prefix="repro-cc-") -> Path:
    d = tempfile.mkdtemp(prefix=prefix)
    _TEMPS.append(d)
    return Path(d)


KEEP_TEMPS = [False]


def cleanup():
    if _cleaned[0]:
        return
    _cleaned[0] = True
    for c in _CLIS:
        c.kill()
    for m in _MARKERS:
        kill_marked(m, 5)
    if not KEEP_TEMPS[0]:
        for d in _TEMPS:
            shutil.rmtree(d, ignore_errors=True)


atexit.register(cleanup)


def _on_signal(signum, frame):
    cleanup()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


for _s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    try:
        signal.signal(_s, _on_signal)
    except (ValueError, OSError):
        pass


# ---------------------------------------------------------------- scripted turns


def last_turn_message(body) -> dict | None:
    """The last message that is not role "system" (2.1.330+ append a system message)."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "system":
            return m
    return None


def _blocks(m) -> list:
    c = m.get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return [b for b in c or [] if isinstance(b, dict)]


def result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and "text" in b)
    return ""


class Script:
    """A scripted agent: see the module docstring."""

    def __init__(self, marker_prefix="repro step"):
        self.prefix = marker_prefix
        self.lock = threading.Lock()
        self.step = 0
        self.prompt: tuple[int, list] | None = None  # (n, calls)
        self.awaited: list[str] | None = None
        self.done = threading.Event()
        self.results: list | None = None
        self.tools: list | None = None
        self.on_request = None  # optional hook(n, body), called first
        self.on_prompt = None  # optional hook(k), called when step k's prompt is answered with calls

    def tool_names(self):
        return [t.get("name") for t in self.tools or []]

    def agent(self, body, n):
        if self.on_request:
            self.on_request(n, body)
        with self.lock:
            if self.tools is None:
                self.tools = body.get("tools")
            last = last_turn_message(body)
            if not last or last.get("role") != "user":
                return None
            blocks = _blocks(last)
            if self.prompt is not None:
                k, calls = self.prompt
                marker = f"{self.prefix} {k}."
                if any(b.get("type") == "text" and marker in (b.get("text") or "") for b in blocks):
                    self.prompt = None
                    if not calls:
                        self.results = []
                        self.done.set()
                        return None
                    if self.on_prompt:
                        self.on_prompt(k)
                    ids = [f"toolu_repro_{k}_{i}" for i in range(len(calls))]
                    self.awaited = ids
                    return [tool_use_block(i, name, inp) for i, (name, inp) in zip(ids, calls)]
                return None
            if self.awaited is not None:
                found = {b.get("tool_use_id"): b for b in blocks if b.get("type") == "tool_result"}
                if all(i in found for i in self.awaited):
                    self.results = [(bool(found[i].get("is_error")), result_text(found[i].get("content")))
                                    for i in self.awaited]
                    self.awaited = None
                    self.done.set()
            return None

    def turn(self, cli: Cli, calls, timeout=60.0):
        with self.lock:
            self.step += 1
            k = self.step
            self.prompt = (k, list(calls))
            self.awaited = None
            self.results = None
            self.done.clear()
        cli.send_user(f"Do {self.prefix} {k}.")
        deadline = time.monotonic() + timeout
        while not self.done.wait(0.05):
            if not cli.alive():
                raise CouldNotRun(f"the CLI exited ({cli.proc.returncode}) during step {k}\n{cli.tail()}")
            if time.monotonic() > deadline:
                with self.lock:
                    self.prompt = None
                    self.awaited = None
                raise CouldNotRun(f"step {k} ({len(calls)} calls) not finished within {timeout} s\n{cli.tail()}")
        return self.results


# ---------------------------------------------------------------- notifications

_NOTE_RE = re.compile(r"<task-notification>(.*?)</task-notification>", re.S)


def message_texts(m) -> list[tuple[str, str]]:
    c = m.get("content")
    if isinstance(c, str):
        return [("string", c)]
    out = []
    for b in c or []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            out.append(("text", b.get("text") or ""))
        elif t == "tool_result":
            out.append(("tool_result", result_text(b.get("content"))))
    return out


def _tag(text, name):
    m = re.search(rf"<{name}>(.*?)</{name}>", text, re.S)
    return m.group(1).strip() if m else None


def notification_blocks(messages) -> list[dict]:
    out = []
    for pos, m in enumerate(messages or []):
        if not isinstance(m, dict):
            continue
        for where, text in message_texts(m):
            for mm in _NOTE_RE.finditer(text):
                inner = mm.group(1)
                out.append({"pos": pos, "role": m.get("role"), "where": where, "text": mm.group(0),
                            "id": _tag(inner, "task-id"), "status": _tag(inner, "status"),
                            "summary": _tag(inner, "summary")})
    return out


class NotificationLedger:
    def __init__(self):
        self.lock = threading.Lock()
        self.max_per_id: dict[str, int] = {}
        self.first: dict[str, tuple] = {}
        self.statuses: dict[str, set] = collections.defaultdict(set)
        self.known = 0
        self.new: list[dict] = []
        self.shrunk: list[str] = []
        self.requests = 0

    def add(self, n, body):
        blocks = notification_blocks(body.get("messages"))
        with self.lock:
            self.requests += 1
            counts = collections.Counter(b["id"] for b in blocks)
            for i, c in counts.items():
                self.max_per_id[i] = max(self.max_per_id.get(i, 0), c)
            for b in blocks:
                if b["id"] not in self.first:
                    self.first[b["id"]] = (n, b["role"], b["where"], time.monotonic())
                if b["status"]:
                    self.statuses[b["id"]].add(b["status"])
            if len(blocks) < self.known:
                self.shrunk.append(f"request {n}: {len(blocks)} blocks, {self.known} before")
            else:
                for b in blocks[self.known:]:
                    self.new.append(dict(b, request=n))
                self.known = len(blocks)

    def per_id(self):
        with self.lock:
            return dict(self.max_per_id)

    def first_seen(self):
        with self.lock:
            return dict(self.first)

    def growth_new(self):
        with self.lock:
            return list(self.new)

    def roles(self):
        with self.lock:
            return collections.Counter((r, w) for (_, r, w, _) in self.first.values())


# ---------------------------------------------------------------- misc

_BG_ID_RE = re.compile(r"running in background with ID: ([A-Za-z0-9_-]+)")
_BG_FILE_RE = re.compile(r"Output is being written to: (\S+)")


def parse_bg_started(text: str):
    """(id, output_file or None) from Bash's answer to run_in_background, or (None, None)."""
    m = _BG_ID_RE.search(text)
    f = _BG_FILE_RE.search(text)
    return (m.group(1) if m else None, f.group(1).rstrip(".") if f else None)


# ---------------------------------------------------------------- background-task sessions

BG_ALLOWED = ("Bash", "BashOutput", "KillBash", "KillShell", "TaskOutput", "TaskStop", "Read")


def sh_quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


class BgSession:
    """One Claude Code CLI in print mode whose scripted model starts background `Bash` work.

    BgSession(version, start_timeout=90, turn_timeout=60)
        .tools            names offered in the first agent request
        .output_tool      ("TaskOutput"|"BashOutput", id field) or None
        .kill_tool        ("TaskStop"|"KillShell"|"KillBash", id field)
        .spawn(commands) -> list[(id, output_file)]    one turn, one Bash call per command;
                          each command runs as `REPRO_BG=SESSION-N sh -c 'COMMAND'`
        .kill(ids) -> list[(is_error, text)]           one turn
        .output(id, block=False) -> (is_error, text)   one turn (needs an output tool)
        .ping()                                        one turn without calls
        .ledger           NotificationLedger of every agent request
        .wait_notified(ids, within) -> per_id dict     polls until every id was seen once
        .stream_notes()   the CLI's own system/task_notification events
        .procs()          live processes of this session's tasks
        .cli, .model, .script, .marker, .root, .config
        .close()          kills the CLI's group and every marked process
    """

    def __init__(self, version, start_timeout=90.0, turn_timeout=60.0):
        self.version = version
        self.turn_timeout = turn_timeout
        argv = claude_command(version)
        self.config = temp_dir("repro-cc-bg-")
        self.root = self.config / "work"
        self.root.mkdir()
        make_config(self.config, self.root)
        self.marker = f"REPRO_BG={os.getpid():x}{int(time.time() * 1000) % 10 ** 8:x}"
        register_marker(self.marker)
        self.ledger = NotificationLedger()
        self.script = Script()
        self.script.on_request = self.ledger.add
        self.model = FakeModel(self.script.agent, agent_tools=("Bash",))
        env = make_env(self.config, self.model.base_url, background=True)
        self.cli = Cli(argv, self.root, env, allowed_tools=BG_ALLOWED, permission_mode="default")
        self.n = 0
        self.started: list[tuple[str, str | None]] = []
        self.script.turn(self.cli, [], start_timeout)
        self.tools = self.script.tool_names()
        props = {t.get("name"): set((t.get("input_schema") or {}).get("properties") or {}) for t in self.script.tools or []}
        if "Bash" not in props or "run_in_background" not in props["Bash"]:
            raise CouldNotRun(f"{version}: no background Bash among {self.tools}")

        def idf(name):
            return next((f for f in ("task_id", "shell_id", "bash_id") if f in props.get(name, ())), None)

        out = next((n for n in ("TaskOutput", "BashOutput") if n in props), None)
        self.output_tool = (out, idf(out)) if out else None
        self.output_block = bool(out and "block" in props[out])
        kill = next((n for n in ("TaskStop", "KillShell", "KillBash") if n in props), None)
        if not kill:
            raise CouldNotRun(f"{version}: no kill tool among {self.tools}")
        self.kill_tool = (kill, idf(kill))

    def spawn(self, commands, timeout=None):
        calls = []
        for c in commands:
            cmd = f"{self.marker}-{self.n} sh -c {sh_quote(c)}"
            self.n += 1
            calls.append(("Bash", {"command": cmd, "description": f"repro background task {self.n}",
                                   "run_in_background": True}))
        res = self.script.turn(self.cli, calls, timeout or self.turn_timeout)
        out = []
        for is_error, text in res:
            i, f = parse_bg_started(text)
            if is_error or not i:
                raise CouldNotRun(f"{self.version}: Bash did not start a background task: {text[:500]!r}")
            out.append((i, f))
        self.started += out
        return out

    def kill(self, ids, timeout=None):
        name, field = self.kill_tool
        return self.script.turn(self.cli, [(name, {field: i}) for i in ids], timeout or self.turn_timeout)

    def output(self, id_, block=False, timeout=None):
        if not self.output_tool:
            raise CouldNotRun(f"{self.version} has no output tool")
        name, field = self.output_tool
        inp = {field: id_}
        if self.output_block:
            inp["block"] = block
            if block:
                inp["timeout"] = 20000
        return self.script.turn(self.cli, [(name, inp)], timeout or self.turn_timeout)[0]

    def ping(self, timeout=None):
        return self.script.turn(self.cli, [], timeout or self.turn_timeout)

    def wait_notified(self, ids, within):
        deadline = time.monotonic() + within
        while True:
            per = self.ledger.per_id()
            if all(per.get(i, 0) >= 1 for i in ids) or time.monotonic() >= deadline:
                return per
            time.sleep(0.05)

    def stream_notes(self):
        return self.cli.events_of("system", "task_notification")

    def procs(self):
        return procs_with_marker(self.marker + "-")

    def close(self):
        self.cli.kill()
        kill_marked(self.marker + "-", 10)
        self.model.close()


# ---------------------------------------------------------------- task-list sessions

TASK_TOOLS = ("TaskCreate", "TaskUpdate", "TaskList", "TaskGet")


class TaskSession:
    """One Claude Code CLI in print mode working on the named task list `list_name`, whose
    task files live in the shared folder `root` (the config folder's `tasks` is a symbolic link
    to it, so the list's files are ROOT/LIST/ID.json).

    TaskSession(version, root, list_name, start_timeout=90, turn_timeout=60)
        .call(name, input) -> (is_error, text)    one turn, one tool call
        .calls([(name, input), ...]) -> list       one turn, several calls
        .create(subject, description="") -> (is_error, text, id or None)
        .restart()                                 a new CLI (same config, same list)
        .tools                                     tool names of the first agent request
        .files() -> {name: text}                   the list folder's files
        .close()
    """

    def __init__(self, version, root, list_name, start_timeout=90.0, turn_timeout=60.0):
        self.version = version
        self.argv = claude_command(version)
        self.root = Path(root)
        self.list = list_name
        self.turn_timeout = turn_timeout
        self.start_timeout = start_timeout
        self.config = temp_dir("repro-cc-tasks-")
        self.cwd = self.config / "work"
        self.cwd.mkdir()
        (self.config / "tasks").symlink_to(self.root)
        make_config(self.config, self.cwd)
        self.cli = None
        self.model = None
        self._start()

    def _start(self):
        self.script = Script()
        self.model = FakeModel(self.script.agent, agent_tools=TASK_TOOLS)
        env = make_env(self.config, self.model.base_url, task_list=self.list)
        self.cli = Cli(self.argv, self.cwd, env, allowed_tools=TASK_TOOLS, permission_mode="default")
        self.script.turn(self.cli, [], self.start_timeout)
        self.tools = self.script.tool_names()
        if "TaskCreate" not in self.tools:
            raise CouldNotRun(f"{self.version} offers no TaskCreate in print mode (tools: {self.tools})")

    def restart(self):
        self.cli.kill()
        self.model.close()
        self._start()

    def calls(self, calls, timeout=None):
        return self.script.turn(self.cli, calls, timeout or self.turn_timeout)

    def call(self, name, input, timeout=None):
        return self.calls([(name, input)], timeout)[0]

    def create(self, subject, description=""):
        err, text = self.call("TaskCreate", {"subject": subject, "description": description,
                                             "activeForm": f"Doing {subject}"})
        m = re.search(r"Task #(\w+) created", text)
        return err, text, (m.group(1) if m else None)

    def files(self):
        d = self.root / self.list
        out = {}
        if d.is_dir():
            for p in sorted(d.iterdir()):
                try:
                    out[p.name] = p.read_text() if p.is_file() else "<dir>"
                except OSError as e:
                    out[p.name] = f"<{e}>"
        return out

    def close(self):
        if self.cli:
            self.cli.kill()
        if self.model:
            self.model.close()
