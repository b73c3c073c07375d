"""Shared by the learn-claude-code reproductions: lesson s07's own TaskManager (and lesson s11's
claim_task), imported by path from a checkout named by LEARN_CLAUDE_CODE_DIR (default
/tmp/learn-claude-code; adapters/learn-claude-code/README.md says how to get the pinned commit)
and called as the lesson's agent calls it, in a temporary folder. No code of taskproof's.

A reproduction prints one JSON line, {"version", "answer", "observed"}, as the other
reproductions of repro/ do; the version is the checkout's commit."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_VERSION = "5c7b873"


def checkout():
    return Path(os.environ.get("LEARN_CLAUDE_CODE_DIR", "/tmp/learn-claude-code"))


def load(name):
    """Imports agents/NAME.py of the checkout in a scratch working folder (the lesson makes
    `.tasks/` where it is imported)."""
    os.environ.setdefault("MODEL_ID", "unused-no-model-is-called")
    path = checkout() / "agents" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            spec.loader.exec_module(module)
        finally:
            os.chdir(here)
    return module


def run(body):
    """Runs `body(s07, folder) -> (answer, observed)` on a fresh folder and prints the line."""
    # The lesson imports its requirements (anthropic, dotenv): run under the checkout's own
    # virtual environment when it has one, as its README sets it up.
    venv = checkout() / ".venv" / "bin" / "python"
    if venv.exists() and Path(sys.prefix) != venv.parent.parent \
            and not os.environ.get("REPRO_LCC_IN_VENV"):
        os.environ["REPRO_LCC_IN_VENV"] = "1"
        os.execv(str(venv), [str(venv), *sys.argv])
    version = DEFAULT_VERSION
    if "--version" in sys.argv:
        version = sys.argv[sys.argv.index("--version") + 1]
    try:
        head = subprocess.run(["git", "-C", str(checkout()), "rev-parse", "--short=7", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        if not version.startswith(head) and not head.startswith(version):
            raise RuntimeError(f"the checkout {checkout()} is at {head}, not {version}")
        s07 = load("s07_task_system")
        with tempfile.TemporaryDirectory(prefix="repro-lcc-") as d:
            answer, observed = body(s07, Path(d) / "tasks")
    except Exception as e:  # the checkout or its requirements are missing: no answer
        print(json.dumps({"version": version, "answer": None,
                          "observed": f"could not answer: {type(e).__name__}: {e}"}))
        sys.exit(3)
    print(json.dumps({"version": version, "answer": answer, "observed": observed}))
