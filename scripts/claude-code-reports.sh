#!/usr/bin/env bash
# Regenerates reports/claude-code/VERSION/ for published versions of Claude Code: the scenario
# suite under the strict profile, every race workload with 4 writers, and a short fuzz run,
# each against the unmodified CLI driven by the scripted model (docs/claude-code.md).
#
#   scripts/claude-code-reports.sh                  # 2.1.17 2.1.20 2.1.21 2.1.112 latest
#   scripts/claude-code-reports.sh 2.1.112          # one version
#   scripts/claude-code-reports.sh --table          # the per-version table, from the files
#   OPS=20 CASES=20 STEPS=24 SHRINK_TIME=60 TIMEOUT=60 scripts/claude-code-reports.sh 2.1.17
#
# The probes (reports/claude-code/probes/) pass where the version shows the behaviours the
# issue named: mirrored edges, a status outside the three refused, a dangling edge dropped,
# unknown fields stripped, unreadable files left out of TaskList, list names sanitised.
#
# Needs node, npm and python3 (versions are installed into the cache on first use). Every command's
# exit status is kept in VERSION/status.txt: 1 means the target was found wanting (expected
# under strict), 3 that it broke the protocol (a target error, to be looked at), with the
# seconds it took and the load average when it ended.
set -uo pipefail
cd "$(dirname "$0")/.."

# Prints the per-version table of docs/claude-code.md and reports/claude-code/README.md
# from the checked-in files alone, so that the docs quote nothing the files do not hold.
table() {
  python3 - reports/claude-code <<'TABLE'
import json, os, re, sys
base = sys.argv[1]
def key(v):
    return tuple(int(x) for x in v.split("."))
# The versions with a run of the suite (the others hold only probes or races of their own).
versions = sorted((d for d in os.listdir(base) if re.fullmatch(r"\d+\.\d+\.\d+", d) and os.path.exists(os.path.join(base, d, "run.json"))), key=key)
def status(v):
    rows = {}
    for line in open(os.path.join(base, v, "status.txt")):
        f = line.split()
        if line.startswith("#") or len(f) < 2:
            continue
        rows[f[0]] = f[1:]
    return rows
def timed(v, *names):
    rows = status(v)
    for name in names:
        r = rows.get(name)
        if r and len(r) >= 3 and r[1].isdigit():
            return f"{r[1]} s at load {r[2]}"
    return ""
def load(v, name):
    path = os.path.join(base, v, name)
    return json.load(open(path)) if os.path.exists(path) else None
def last_line(v, name):
    path = os.path.join(base, v, name)
    return open(path).read().strip().splitlines()[-1] if os.path.exists(path) else None
runs = {v: load(v, "run.json") for v in versions}
whole = max(len(r["scenarios"]) for r in runs.values() if r)
cols = {v: [] for v in versions}
labels = []
def row(label, cell):
    labels.append(label)
    for v in versions:
        cols[v].append(cell(v) or "not run")
def run_cell(v):
    r = runs[v]
    if not r:
        return None
    s = r["summary"]
    n = len(r["scenarios"])
    part = f"all {n}" if n == whole else f"{n} of {whole} (reduced)"
    return f"{part}: {s['passed']} passed, {s['failed']} failed, {s['errors']} errors, {s['skipped']} skipped"
def with_time(text, v, *names):
    t = timed(v, *names)
    return text and (f"{text} ({t})" if t else text)
def race(w):
    def cell(v):
        r = load(v, f"race-{w}.json")
        if not r:
            return None
        found = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in r["anomalies"].items() if n) or "none"
        secs = sum(x["seconds"] for x in r["workloads"])
        return f"{found}; {r['errors']} target errors; {r['writers']}x{r['ops']} ops in {secs:.1f} s"
    return cell
def fuzz(v):
    last = last_line(v, "fuzz.txt")
    if not last:
        return None
    m = re.match(r"(\d+ cases: \d+ distinct findings)", last)
    return with_time(m.group(1) if m else last, v, "fuzz")
row("driven by", lambda v: "terminal UI" if key(v) < (2, 1, 19) else "print mode")
row("`run` (strict)", run_cell)
row("`run` time", lambda v: timed(v, "run", "run-subset"))
row("probes (6 behaviours)", lambda v: with_time(last_line(v, "probes.txt"), v, "probes"))
for w in ["create", "metadata", "fields", "edges", "claim", "complete"]:
    row(f"race `{w}`", race(w))
row("duplicate ids (race `create`)", lambda v: (lambda r: r and str(r["anomalies"]["duplicate_ids"]))(load(v, "race-create.json")))
row("fuzz (strict)", fuzz)
print("| | " + " | ".join(versions) + " |")
print("|---" * (len(versions) + 1) + "|")
for i, label in enumerate(labels):
    print(f"| {label} | " + " | ".join(cols[v][i] for v in versions) + " |")
TABLE
}

if [ "${1:-}" = --table ]; then
  table
  exit
fi

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(2.1.17 2.1.20 2.1.21 2.1.112 latest)
bin=${TASKPROOF:-target/release/taskproof}
[ -x "$bin" ] || cargo build --release --locked
timeout=${TIMEOUT:-60}
ops=${OPS:-10}
cases=${CASES:-10}
steps=${STEPS:-12}
shrink=${SHRINK_TIME:-30}
jobs=${JOBS:-2}

# Appends "NAME STATUS SECONDS LOAD" to the version's status.txt.
note() {
  echo "$1 $2 $((SECONDS - began)) $(cut -d' ' -f1 /proc/loadavg)" >> "$out/status.txt"
  began=$SECONDS
}

# Keeps the JSON reports small: every string longer than 2,000 characters (a session's
# transcript, a CLI's output) is cut, saying how much was cut. Lists are never cut: a
# consumer counts them (the conformance matrix counts `scenarios`, a reader counts
# witnesses), and a list cut short would be read as the whole.
trim() {
  python3 - "$1"/*.json <<'PY'
import json, sys
def cut(v):
    if isinstance(v, str) and len(v) > 2000:
        return v[:2000] + f" ... [{len(v) - 2000} characters cut]"
    if isinstance(v, list):
        return [cut(x) for x in v]
    if isinstance(v, dict):
        return {k: cut(x) for k, x in v.items()}
    return v
for path in sys.argv[1:]:
    with open(path) as f:
        data = json.load(f)
    with open(path, "w") as f:
        json.dump(cut(data), f, indent=1, ensure_ascii=False)
        f.write("\n")
PY
}

for v in "${versions[@]}"; do
  if [ "$v" = latest ]; then
    v=$(npm view @anthropic-ai/claude-code@latest version) || { echo "npm view failed" >&2; exit 2; }
  fi
  out=reports/claude-code/$v
  mkdir -p "$out"
  echo "# command exit-status seconds load-average (OPS=$ops CASES=$cases STEPS=$steps SHRINK_TIME=$shrink TIMEOUT=$timeout JOBS=$jobs)" > "$out/status.txt"
  began=$SECONDS
  target=claude-code@$v
  echo "== $target: run (strict)"
  "$bin" run --target "$target" --profile strict --jobs "$jobs" --timeout "$timeout" \
    --color never --report "json:$out/run.json" --report "md:$out/run.md" > "$out/run.txt" 2>&1
  note run $?
  echo "== $target: probes (reports/claude-code/probes: the product's own behaviours)"
  "$bin" run reports/claude-code/probes --target "$target" --profile strict --jobs 1 \
    --timeout "$timeout" --color never > "$out/probes.txt" 2>&1
  note probes $?
  for w in metadata fields create edges claim complete; do
    echo "== $target: race $w"
    "$bin" race --target "$target" --workload "$w" --writers 4 --ops "$ops" --seed 1 \
      --timeout "$timeout" --report "json:$out/race-$w.json" > "$out/race-$w.txt" 2>&1
    note "race-$w" $?
  done
  echo "== $target: fuzz"
  rm -rf "$out/fuzz"
  "$bin" fuzz --target "$target" --cases "$cases" --steps "$steps" --seed 1 \
    --shrink-time "$shrink" --timeout "$timeout" --out "$out/fuzz" > "$out/fuzz.txt" 2>&1
  note fuzz $?
  # A finding another version's run keeps byte for byte is kept once (reports/README.md).
  python3 scripts/lib/keep_once.py "$out/fuzz"
  trim "$out"
  cat "$out/status.txt"
done
