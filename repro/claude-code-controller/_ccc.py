"""Shared by the claude-code-controller reproductions: installs the npm package
claude-code-controller (unmodified) with npm into the cache taskproof also uses
($TASKPROOF_CLAUDE_CODE_CACHE, else $XDG_CACHE_HOME/taskproof/claude-code, else
~/.cache/taskproof/claude-code; claude-code-controller@VERSION/node_modules/…), then runs one
node script of this folder with HOME at a fresh temporary folder and CCC_PACKAGE naming the
package. The node scripts import nothing but the package and node's own modules; no code of
taskproof's. Each script prints, as its last line, {"answer": true|false, "observed": TEXT}; this
prints the protocol's line (repro/README.md) and exits 0, or 2 when it could not answer."""
import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE, DEFAULT_VERSION = "claude-code-controller", "0.3.0"
HERE = Path(__file__).resolve().parent


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def cache():
    if os.environ.get("TASKPROOF_CLAUDE_CODE_CACHE"):
        return Path(os.environ["TASKPROOF_CLAUDE_CODE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "taskproof" / "claude-code"


def install(version):
    """The package folder of `version`, installed with npm unless it is there."""
    root = cache()
    folder = root / f"{PACKAGE}@{version}"
    pkg = folder / "node_modules" / PACKAGE
    if (pkg / "package.json").is_file():
        return pkg
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (pkg / "package.json").is_file():
            return pkg
        staging = Path(tempfile.mkdtemp(prefix=f".repro-{PACKAGE}@{version}-", dir=root))
        (staging / "package.json").write_text('{"private": true}\n')
        log(f"npm install {PACKAGE}@{version} into {folder}")
        r = subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund",
                            "--loglevel=error", f"{PACKAGE}@{version}"], cwd=staging,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"npm install {PACKAGE}@{version} failed: {r.stderr.strip()[-400:]}")
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    return pkg


def finish(version, answer, observed, error=None):
    line = {"version": version, "answer": answer, "observed": " ".join(str(observed).split())}
    if answer is None:
        line["error"] = " ".join(str(error or observed).split())
    print(json.dumps(line, ensure_ascii=False), flush=True)
    sys.exit(0 if answer is not None else 2)


def run(script, timeout=150):
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default=DEFAULT_VERSION)
    version = ap.parse_args().version
    home = tempfile.mkdtemp(prefix="repro-ccc-")
    try:
        pkg = install(version)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "CCC_PACKAGE": str(pkg)}
        log(f"HOME={home} node {script}")
        r = subprocess.run(["node", str(HERE / script)], env=env, cwd=home, capture_output=True,
                           text=True, timeout=timeout)
        sys.stderr.write(r.stderr)
        lines = [l for l in r.stdout.splitlines() if l.strip()]
        for l in lines[:-1]:
            log(l)
        if r.returncode != 0 or not lines:
            finish(version, None, f"node {script} exited {r.returncode}", r.stderr.strip()[-400:])
        out = json.loads(lines[-1])
        finish(version, out["answer"], out["observed"])
    except (OSError, RuntimeError, ValueError, KeyError, subprocess.SubprocessError) as e:
        finish(version, None, f"could not answer: {type(e).__name__}: {e}", str(e))
    finally:
        shutil.rmtree(home, ignore_errors=True)
