"""A small MCP client over stdio (Python 3.11 standard library only).

It starts an MCP server as a child process in a process group of its own, speaks JSON-RPC
2.0 to it one message per line (the MCP stdio transport), and kills the whole group when it
is closed, so whatever the server started (an ``npx``, a ``node``, a ``bun``) ends too.

API
---

``McpServer(argv, cwd=None, env=None, timeout=10.0, start_timeout=60.0, stderr=None,
roots=None, strict_stdout=False)``
    Start ``argv`` (a list of words, no shell) in ``cwd`` with ``env`` (added to a copy of
    ``os.environ``; a value ``None`` removes that variable), as the leader of a new process
    group (``.pid``). Nothing is sent yet. ``timeout``: seconds any answer may take;
    ``start_timeout``: the same for ``initialize``. ``stderr``: a file object that receives
    the server's stderr (default: kept in memory, read with ``.stderr_text()``).
    ``roots``: the answer to the server's ``roots/list`` (declared in ``initialize`` when
    given). ``.alive()`` tells whether the server process still runs.

``server.initialize(protocol="2025-06-18", client=("mcp-stdio-repro", "0.1"))``
    Sends ``initialize``; if the server answers another ``protocolVersion`` that one is
    kept (``server.protocol``). Then sends ``notifications/initialized``. Returns the
    ``initialize`` result (``server.info`` is its ``serverInfo``). Waits at most
    ``start_timeout`` seconds.

``server.list_tools()``
    Every tool of ``tools/list`` (following ``nextCursor``), as the list of tool objects;
    the raw result of the first page is kept in ``server.tools_result``.

``server.call(name, arguments=None)``
    ``tools/call``; returns a ``ToolResult``. A JSON-RPC error answer raises ``RpcError``
    (``.code``, ``.message``, ``.data``).

``ToolResult``
    ``.raw`` the result object as received; ``.is_error`` (``isError`` is true);
    ``.text`` the text of every ``text`` content item joined with a newline;
    ``.structured`` the ``structuredContent`` or ``None``; ``.json()`` the
    ``structuredContent`` if any, else the text parsed as JSON (``None`` if it is not JSON).

``server.request(method, params=None, timeout=None)`` / ``server.notify(method, params)``
    Any other JSON-RPC request or notification.

``server.close()``
    Closes stdin, waits up to 0.5 s, then sends SIGKILL to the process group. Idempotent.
    ``server.kill()`` sends SIGKILL at once (a crash), then closes.
    ``McpServer`` is also a context manager (``with McpServer([...]) as s:``), and every
    server not closed is killed at interpreter exit and on SIGTERM/SIGINT handled by
    ``install_signal_cleanup()``.

Errors: ``McpError`` (base), ``McpTimeout`` (no answer in time), ``McpClosed`` (the server
exited or closed stdout), ``RpcError``. A line on stdout that is not JSON is kept in
``server.noise`` (a list) and otherwise skipped; ``strict_stdout=True`` raises instead.
Requests the server sends to the client (``roots/list``, ``ping``…) are answered: ``ping``
with ``{}``, ``roots/list`` with ``{"roots": []}`` (or ``roots=[...]`` given at start), any
other with a JSON-RPC "method not found" error. Notifications from the server are kept in
``server.notifications``.

``npm_package(package, version, bins=())``
    The folder of ``package@version`` installed from npm (``npm install --prefix``) under
    ``$TASKPROOF_MCP_CACHE``, else ``$XDG_CACHE_HOME/taskproof/mcp``, else
    ``~/.cache/taskproof/mcp``, in ``PACKAGE@VERSION`` with a scoped name's ``/`` written
    ``+`` (``@zeeg+dex@0.16.0``); installs it first when its ``package.json`` is missing.
    ``bins``: further ``name@version`` packages installed into the same folder (``bun``).
    Installs hold a lock (``FOLDER.lock``), so concurrent scripts install once. Raises
    ``McpError`` when npm fails. ``npm_bin(folder, name)`` is the path of
    ``node_modules/.bin/NAME`` in it.

``run_repro(body, default_version, prefix="repro-")``
    The frame of a reproduction script: reads ``--version V`` (default
    ``default_version``), makes a temporary folder, calls ``body(version, folder)``, which
    returns ``(answer, observed)``, and ends with ``finish``. An ``McpError``, ``OSError``,
    ``ValueError``, ``KeyError``, ``TypeError`` or ``IndexError`` raised by ``body`` ends
    it with ``answer: null`` (exit 2). Every server still running is killed and the folder
    removed before the last line is printed.

``log(*parts)`` writes one line to stderr (what a reproduction observed, as it goes).
``finish(version, answer, observed, error=None)`` kills every live server, prints the
protocol's last stdout line (``observed`` and ``error`` with their whitespace runs made one
space) and exits 0 (answered) or 2 (``answer`` is ``None``: could not answer).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

__all__ = [
    "run_repro", "npm_package", "npm_bin", "McpServer", "ToolResult", "McpError", "McpTimeout", "McpClosed", "RpcError",
    "install_signal_cleanup", "log", "finish",
]

PROTOCOL = "2025-06-18"

_live: "set[McpServer]" = set()


class McpError(Exception):
    pass


class McpTimeout(McpError):
    pass


class McpClosed(McpError):
    pass


class RpcError(McpError):
    def __init__(self, code, message, data=None):
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class ToolResult:
    def __init__(self, raw: dict):
        self.raw = raw
        self.is_error = bool(raw.get("isError"))
        self.structured = raw.get("structuredContent")
        parts = [c.get("text", "") for c in raw.get("content") or [] if c.get("type") == "text"]
        self.text = "\n".join(parts)

    def json(self):
        if self.structured is not None:
            return self.structured
        try:
            return json.loads(self.text)
        except (ValueError, TypeError):
            return None

    def __repr__(self):
        return f"ToolResult(is_error={self.is_error}, text={self.text[:80]!r})"


class McpServer:
    def __init__(self, argv, cwd=None, env=None, timeout=10.0, start_timeout=60.0,
                 stderr=None, roots=None, strict_stdout=False):
        full_env = dict(os.environ)
        for k, v in (env or {}).items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = str(v)
        self.argv = list(argv)
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.roots = roots or []
        self.strict_stdout = strict_stdout
        self.protocol = PROTOCOL
        self.info = None
        self.tools_result = None
        self.noise: list[str] = []
        self.notifications: list[dict] = []
        self._next_id = 1
        self._answers: "queue.Queue[dict | None]" = queue.Queue()
        self._stderr_chunks: list[bytes] = []
        self._write_lock = threading.Lock()
        self._closed = False
        self._proc = subprocess.Popen(
            self.argv, cwd=cwd, env=full_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.PIPE, start_new_session=True,
        )
        self.pid = self._proc.pid
        _live.add(self)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        if stderr is None:
            threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- plumbing ---------------------------------------------------------------------
    def _read_stdout(self):
        out = self._proc.stdout
        try:
            for line in out:
                line = line.strip()
                if not line:
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    text = line.decode("utf-8", "replace")
                    self.noise.append(text)
                    if self.strict_stdout:
                        self._answers.put({"_noise": text})
                    continue
                if not isinstance(msg, dict):
                    self.noise.append(line.decode("utf-8", "replace"))
                    continue
                if "method" in msg and "id" in msg:
                    self._answer_server_request(msg)
                elif "method" in msg:
                    self.notifications.append(msg)
                else:
                    self._answers.put(msg)
        except (OSError, ValueError):
            pass
        self._answers.put(None)

    def _read_stderr(self):
        try:
            for chunk in iter(lambda: self._proc.stderr.read1(65536), b""):
                self._stderr_chunks.append(chunk)
        except (OSError, ValueError):
            pass

    def _answer_server_request(self, msg):
        method = msg.get("method")
        if method == "ping":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
        elif method == "roots/list":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": self.roots}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"],
                     "error": {"code": -32601, "message": f"method not found: {method}"}}
        try:
            self._send(reply)
        except McpError:
            pass

    def _send(self, msg):
        data = (json.dumps(msg, ensure_ascii=False) + "\n").encode("utf-8")
        with self._write_lock:
            try:
                self._proc.stdin.write(data)
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as e:
                raise McpClosed(f"cannot write to the server: {e}") from None

    def stderr_text(self) -> str:
        return b"".join(self._stderr_chunks).decode("utf-8", "replace")

    def alive(self) -> bool:
        return self._proc.poll() is None

    # -- JSON-RPC ---------------------------------------------------------------------
    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    def request(self, method, params=None, timeout=None):
        rid = self._next_id
        self._next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise McpTimeout(f"{method}: no answer within {limit} s")
            try:
                ans = self._answers.get(timeout=left)
            except queue.Empty:
                raise McpTimeout(f"{method}: no answer within {limit} s") from None
            if ans is None:
                self._answers.put(None)  # keep the end marker for later readers
                code = self._proc.poll()
                raise McpClosed(f"{method}: the server closed stdout (exit status {code}); "
                                f"stderr tail: {self.stderr_text()[-400:]!r}")
            if "_noise" in ans:
                raise McpError(f"{method}: stdout line is not JSON-RPC: {ans['_noise'][:200]!r}")
            if ans.get("id") != rid:
                continue  # an answer to an earlier request that timed out
            if "error" in ans:
                err = ans["error"] or {}
                raise RpcError(err.get("code"), err.get("message"), err.get("data"))
            return ans.get("result")

    # -- MCP --------------------------------------------------------------------------
    def initialize(self, protocol=PROTOCOL, client=("mcp-stdio-repro", "0.1")):
        res = self.request("initialize", {
            "protocolVersion": protocol,
            "capabilities": {"roots": {"listChanged": False}} if self.roots else {},
            "clientInfo": {"name": client[0], "version": client[1]},
        }, timeout=self.start_timeout)
        self.protocol = (res or {}).get("protocolVersion") or protocol
        self.info = (res or {}).get("serverInfo")
        self.notify("notifications/initialized")
        return res

    def list_tools(self):
        tools, cursor, first = [], None, True
        while True:
            res = self.request("tools/list", {"cursor": cursor} if cursor else {})
            if first:
                self.tools_result, first = res, False
            tools.extend(res.get("tools") or [])
            cursor = res.get("nextCursor")
            if not cursor:
                return tools

    def call(self, name, arguments=None, timeout=None) -> ToolResult:
        res = self.request("tools/call", {"name": name, "arguments": arguments or {}},
                           timeout=timeout)
        return ToolResult(res or {})

    # -- end ----------------------------------------------------------------------------
    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _live.discard(self)

    def kill(self):
        """SIGKILL the group at once (a crash), without closing stdin first."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _close_all():
    for s in list(_live):
        s.close()


atexit.register(_close_all)


def install_signal_cleanup():
    """On SIGTERM/SIGINT/SIGHUP: kill every live server group, then exit 2."""
    def handler(signum, frame):
        _close_all()
        os._exit(2)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)


def _cache_root():
    if os.environ.get("TASKPROOF_MCP_CACHE"):
        return os.environ["TASKPROOF_MCP_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "taskproof", "mcp")


def npm_package(package, version, bins=()):
    import fcntl
    root = _cache_root()
    folder = os.path.join(root, f"{package.replace('/', '+')}@{version}")
    os.makedirs(root, exist_ok=True)
    # one installer at a time per folder (several reproductions may start together)
    with open(folder + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _npm_install(folder, [(package, version)] + [tuple(b.rsplit("@", 1)) for b in bins])
    return folder


def _npm_install(folder, wanted):
    for name, ver in wanted:
        pj = os.path.join(folder, "node_modules", name, "package.json")
        try:
            with open(pj) as f:
                if json.load(f).get("version") == ver:
                    continue
        except (OSError, ValueError):
            pass
        fresh = not os.path.exists(folder)
        os.makedirs(folder, exist_ok=True)
        log(f"npm install --prefix {folder} {name}@{ver}")
        # run from / : a folder named like the spec in the working folder would be taken
        # for a local package
        r = subprocess.run(["npm", "install", "--prefix", folder, f"{name}@{ver}",
                            "--no-audit", "--no-fund"], cwd="/", capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            if fresh:
                import shutil
                shutil.rmtree(folder, ignore_errors=True)
            raise McpError(f"npm install {name}@{ver} failed: {r.stderr.strip()[-400:]}")


def npm_bin(folder, name):
    return os.path.join(folder, "node_modules", ".bin", name)


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def finish(version, answer, observed, error=None):
    """Print the protocol's last stdout line and exit (0 answered, 2 could not answer)."""
    _close_all()
    observed = " ".join(str(observed).split())
    line = {"version": version, "answer": answer, "observed": observed}
    if answer is None:
        line["error"] = " ".join(str(error or observed).split())
    sys.stdout.flush()
    print(json.dumps(line, ensure_ascii=False), flush=True)
    sys.exit(0 if answer is not None else 2)


def run_repro(body, default_version, prefix="repro-"):
    import argparse
    import shutil
    import tempfile
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default=default_version)
    version = ap.parse_args().version
    install_signal_cleanup()
    folder = tempfile.mkdtemp(prefix=prefix)
    result = None
    try:
        answer, observed = body(version, folder)
        result = (answer, observed, None)
    except (McpError, OSError, ValueError, KeyError, TypeError, IndexError,
            subprocess.SubprocessError) as e:
        log(f"could not answer: {type(e).__name__}: {e}")
        result = (None, f"could not answer: {type(e).__name__}: {e}", str(e))
    finally:
        _close_all()
        shutil.rmtree(folder, ignore_errors=True)
    finish(version, result[0], result[1], result[2])
