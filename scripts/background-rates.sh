#!/usr/bin/env bash
# How often a background-task scenario breaks its rule on each Claude Code version, over N
# runs, where one run does not settle it (docs/background.md: tasks that end during the turn
# that started them are notified or not depending on timing inside the CLI).
#
#   scripts/background-rates.sh SCENARIO RULE N VERSION...
#   TASKPROOF_RATES_FROM=DIR scripts/background-rates.sh SCENARIO RULE N VERSION...
#                                   # tabulate the run reports kept in DIR, run nothing
#
# Writes reports/claude-code/background-rates-SCENARIO.{md,json}: per version the runs, the
# runs in which RULE held (no failure cites it), and per run the tasks never notified, with
# the load average of each run. The run reports, and the scripted model's log of each run
# (every request the CLI sent: `--model-log`), are kept in a folder the script names.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=$1 rule=$2 n=$3
shift 3
if [ -n "${TASKPROOF_RATES_FROM:-}" ]; then
  out=$TASKPROOF_RATES_FROM
  skip_runs=1
else
  cargo build --release --quiet
  bin=$(mktemp -d)/taskproof
  cp target/release/taskproof "$bin" # rebuilding during the runs cannot touch it
  out=$(mktemp -d)
  skip_runs=0
fi
echo "run reports in $out"
for v in "$@"; do
  [ "$skip_runs" = 1 ] && break
  for i in $(seq 1 "$n"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$bin" run --suite background --target "claude-code@$v" --filter "$scenario" \
      --report "json:$out/$v-$i.json" --model-log "$out/$v-$i.model-log" >/dev/null 2>&1 || true
    echo "$load" > "$out/$v-$i.load"
    echo "$v run $i: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['scenarios'][0]['outcome'])" "$out/$v-$i.json") (load $load)"
  done
done
python3 - "$scenario" "$rule" "$n" "$out" "$@" <<'PY'
import json, re, sys, statistics, datetime
scenario, rule, n, out, versions = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
rows, data = [], {}
for v in versions:
    runs = []
    for i in range(1, n + 1):
        r = json.load(open(f"{out}/{v}-{i}.json"))["scenarios"][0]
        never = sorted({m.group(1) for f in r.get("failures", [])
                        for m in [re.search(r"task (\S+) \(\S+\) was notified 0 time", f["reason"])] if m})
        load = float(open(f"{out}/{v}-{i}.load").read())
        broke = [f["reason"] for f in r.get("failures", []) if rule in f.get("rules", [])]
        runs.append({"outcome": r["outcome"], "rule_held": r["outcome"] != "error" and not broke,
                     "rule_failures": broke, "never_notified": never, "load": load,
                     "reason": r.get("reason")})
    data[v] = runs
    counts = [len(x["never_notified"]) for x in runs]
    rows.append(f"| {v} | {n} | {sum(x['rule_held'] for x in runs)} | "
                f"{sum(bool(x['rule_failures']) for x in runs)} | {sum(x['outcome'] == 'error' for x in runs)} | "
                f"{min(counts)} / {statistics.median(counts):g} / {max(counts)} | "
                f"{min(x['load'] for x in runs):.2f}-{max(x['load'] for x in runs):.2f} |")
import os
stamps = [os.path.getmtime(f"{out}/{v}-{i}.json") for v in versions for i in range(1, n + 1)]
fmt = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
now = f"runs from {fmt(min(stamps))} to {fmt(max(stamps))}"
md = f"""# `{scenario}`, rule {rule}, {n} runs per version

Made by `scripts/background-rates.sh {scenario} {rule} {n} {' '.join(versions)}` ({now}): each
run is `taskproof run --suite background --target claude-code@VERSION --filter {scenario}`,
one after another. A run breaks {rule} when one of its failures cites it (a failure of
another rule, such as the id form B6 before 2.1.53, does not count). "Never notified" counts
the tasks of a run the model was never told of.

| version | runs | {rule} held | {rule} broken | target error | tasks never notified per run (min / median / max) | load (1 min) |
|---|---|---|---|---|---|---|
""" + "\n".join(rows) + "\n\nEvery run's verdict, tasks and load are in the JSON file beside this one.\n"
base = f"reports/claude-code/background-rates-{scenario}"
open(base + ".md", "w").write(md)
json.dump({"scenario": scenario, "rule": rule, "runs_per_version": n, "date": now, "versions": data},
          open(base + ".json", "w"), indent=2)
print(md)
PY
