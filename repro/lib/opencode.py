"""Independent helpers for reproducing claims about OpenCode with the oh-my-opencode plugin.
Python 3.11 standard library only; shares no code with taskproof (repro/README.md). The fake
Anthropic Messages API and the turn scripting are claude.py's (the same API: OpenCode's
`anthropic` provider speaks it).

API
---
    install(plugin, opencode) -> Path
        npm-installs oh-my-opencode@PLUGIN and opencode-ai@OPENCODE into
        CACHE/PLUGIN+opencode-OPENCODE (CACHE: $XDG_CACHE_HOME/taskproof/oh-my-opencode-repro,
        else ~/.cache/taskproof/oh-my-opencode-repro), under an exclusive flock, renamed into
        place when npm succeeded. Raises CouldNotRun.
    run_calls(install_dir, storage, calls, home=None, timeout=120) -> list[(is_error, text)]
        One `opencode run "Do repro step 1."` with the plugin's task system on and
        `sisyphus.tasks.storage_path` = STORAGE, the `anthropic` provider at a FakeModel that
        answers the prompt with one tool_use per call (name, input), all in one message, and
        ends the turn once every result came back. HOME (and every XDG folder) is `home` (a
        fresh temporary folder when None: OpenCode then installs @opencode-ai/plugin with npm
        into its config folder, which takes a while the first time).
    run_steps(install_dir, storage, steps, home=None, timeout=180) -> list[list[(is_error, text)]]
        Like run_calls, but several model turns in the one `opencode run`: `steps` is a list
        of functions, each given every earlier step's results and returning its calls; the
        model answers each step's results with the next step's calls, one tool_use at a time
        (so they run in order), and ends the turn after the last.
"""
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import fcntl
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import claude as C  # noqa: E402

TASK_TOOLS = ("task_create", "task_get", "task_list", "task_update")


def cache_dir() -> Path:
    v = os.environ.get("XDG_CACHE_HOME")
    base = Path(v) if v else Path.home() / ".cache"
    return base / "taskproof" / "oh-my-opencode-repro"


def binary(install_dir: Path) -> Path:
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return Path(install_dir) / "node_modules" / f"opencode-linux-{arch}" / "bin" / "opencode"


def install(plugin: str, opencode: str) -> Path:
    for v in (plugin, opencode):
        if not C._VERSION_RE.match(v):
            raise C.CouldNotRun(f"not a version number: {v!r}")
    cache = cache_dir()
    final = cache / f"{plugin}+opencode-{opencode}"
    if binary(final).is_file():
        return final
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary(final).is_file():
            return final
        staging = cache / f".installing-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        (staging / "package.json").write_text('{"private": true}\n')
        env = dict(os.environ, NO_UPDATE_NOTIFIER="1", npm_config_fund="false", npm_config_audit="false")
        r = subprocess.run(["npm", "install", "--no-save", "--loglevel=error",
                            f"oh-my-opencode@{plugin}", f"opencode-ai@{opencode}"],
                           cwd=staging, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=900)
        if r.returncode != 0 or not binary(staging).is_file():
            shutil.rmtree(staging, ignore_errors=True)
            raise C.CouldNotRun(f"npm install exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        os.rename(staging, final)
    return final


def run_calls(install_dir, storage, calls, home=None, timeout=120.0):
    script = C.Script()
    # One prompt: Script answers the marker of step 1 with the calls, and ends the turn on the
    # results. The prompt is OpenCode's command line, so step 1 is primed before it starts.
    with script.lock:
        script.step = 1
        script.prompt = (1, list(calls))
        script.done.clear()
    model, proc = _opencode(install_dir, storage, script.agent, home)
    _finish(model, proc, script.done, timeout)
    return script.results


class _Steps:
    """A model callback that plays `steps` one call at a time (see run_steps)."""

    def __init__(self, steps):
        import threading
        self.steps = list(steps)
        self.results = []          # per step, the (is_error, text) of each call
        self.pending = []          # calls of the current step not yet made
        self.current = None        # results of the current step so far
        self.awaited = None
        self.started = False
        self.done = threading.Event()
        self.n = 0

    def _next_block(self):
        while not self.pending:
            if self.current is not None:
                self.results.append(self.current)
                self.current = None
            if not self.steps:
                self.done.set()
                return None
            self.pending = list(self.steps.pop(0)(self.results))
            self.current = []
        name, inp = self.pending.pop(0)
        self.n += 1
        self.awaited = f"toolu_repro_{self.n}"
        return [C.tool_use_block(self.awaited, name, inp)]

    def agent(self, body, n):
        last = C.last_turn_message(body)
        if not last or last.get("role") != "user":
            return None
        blocks = C._blocks(last)
        if not self.started:
            if any(b.get("type") == "text" and "Do repro step 1." in (b.get("text") or "") for b in blocks):
                self.started = True
                return self._next_block()
            return None
        found = [b for b in blocks if b.get("type") == "tool_result" and b.get("tool_use_id") == self.awaited]
        if not found:
            return None
        self.current.append((bool(found[0].get("is_error")), C.result_text(found[0].get("content"))))
        return self._next_block()


def _opencode(install_dir, storage, agent, home):
    home = Path(home) if home else C.temp_dir("repro-omo-home-")
    config = home / ".config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    (config / "oh-my-opencode.json").write_text(json.dumps(
        {"experimental": {"task_system": True}, "sisyphus": {"tasks": {"storage_path": str(storage)}}}))
    model = C.FakeModel(agent, agent_tools=TASK_TOOLS)
    entry = Path(install_dir) / "node_modules" / "oh-my-opencode" / "dist" / "index.js"
    (config / "opencode.json").write_text(json.dumps({
        "plugin": [f"file://{entry}"],
        "model": "anthropic/claude-sonnet-4-5",
        "small_model": "anthropic/claude-haiku-4-5",
        "autoupdate": False,
        "share": "disabled",
        "provider": {"anthropic": {"options": {"baseURL": f"{model.base_url}/v1", "apiKey": "repro"}}},
    }))
    work = home / "work"
    work.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8",
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local" / "state"),
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    proc = subprocess.Popen([str(binary(install_dir)), "run", "Do repro step 1."], cwd=work, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    return model, proc


def _finish(model, proc, done, timeout):
    deadline = time.monotonic() + timeout
    try:
        while not done.wait(0.1):
            if proc.poll() is not None:
                raise C.CouldNotRun(f"opencode exited {proc.returncode} before the results came back: "
                                    f"{proc.stdout.read().decode(errors='replace')[-1500:]}")
            if time.monotonic() > deadline:
                raise C.CouldNotRun(f"no results within {timeout} s")
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
    finally:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait()
        model.close()


def run_steps(install_dir, storage, steps, home=None, timeout=180.0):
    play = _Steps(steps)
    model, proc = _opencode(install_dir, storage, play.agent, home)
    _finish(model, proc, play.done, timeout)
    return play.results


def loadavg() -> str:
    return C.loadavg()
