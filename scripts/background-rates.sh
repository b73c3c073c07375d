#!/usr/bin/env bash
# How often a background-task scenario fails on each Claude Code version, over N runs, where
# one run's verdict does not settle it (docs/background.md: tasks that end during the turn that
# started them are notified or not depending on timing inside the CLI).
#
#   scripts/background-rates.sh SCENARIO N VERSION...
#
# Writes reports/claude-code/background-rates-SCENARIO.{md,json}: per version the runs, how
# many passed, and per run the tasks never notified, with the load average of each run.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=$1 n=$2
shift 2
cargo build --release --quiet
bin=$(mktemp -d)/taskproof
cp target/release/taskproof "$bin" # rebuilding during the runs cannot touch it
out=$(mktemp -d)
for v in "$@"; do
  for i in $(seq 1 "$n"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$bin" run --suite background --target "claude-code@$v" --filter "$scenario" \
      --report "json:$out/$v-$i.json" >/dev/null 2>&1 || true
    echo "$load" > "$out/$v-$i.load"
    echo "$v run $i: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['scenarios'][0]['outcome'])" "$out/$v-$i.json") (load $load)"
  done
done
python3 - "$scenario" "$n" "$out" "$@" <<'PY'
import json, re, sys, statistics, datetime
scenario, n, out, versions = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
rows, data = [], {}
for v in versions:
    runs = []
    for i in range(1, n + 1):
        r = json.load(open(f"{out}/{v}-{i}.json"))["scenarios"][0]
        never = sorted({m.group(1) for f in r.get("failures", [])
                        for m in [re.search(r"task (\S+) \(\S+\) was notified 0 time", f["reason"])] if m})
        load = float(open(f"{out}/{v}-{i}.load").read())
        runs.append({"outcome": r["outcome"], "never_notified": never, "load": load,
                     "reason": r.get("reason")})
    data[v] = runs
    counts = [len(x["never_notified"]) for x in runs]
    rows.append(f"| {v} | {n} | {sum(x['outcome'] == 'pass' for x in runs)} | "
                f"{sum(x['outcome'] == 'fail' for x in runs)} | {sum(x['outcome'] == 'error' for x in runs)} | "
                f"{min(counts)} / {statistics.median(counts):g} / {max(counts)} | "
                f"{min(x['load'] for x in runs):.2f}-{max(x['load'] for x in runs):.2f} |")
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
md = f"""# `{scenario}`, {n} runs per version

Made by `scripts/background-rates.sh {scenario} {n} {' '.join(versions)}` ({now}): each run is
`taskproof run --suite background --target claude-code@VERSION --filter {scenario}`, one
after another. "Never notified" counts the tasks of a run the model was never told of.

| version | runs | pass | fail | error | tasks never notified per run (min / median / max) | load (1 min) |
|---|---|---|---|---|---|---|
""" + "\n".join(rows) + "\n\nEvery run's verdict, tasks and load are in the JSON file beside this one.\n"
base = f"reports/claude-code/background-rates-{scenario}"
open(base + ".md", "w").write(md)
json.dump({"scenario": scenario, "runs_per_version": n, "date": now, "versions": data},
          open(base + ".json", "w"), indent=2)
print(md)
PY
