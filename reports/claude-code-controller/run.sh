#!/bin/sh
# Makes the reports of reports/claude-code-controller/VERSION/ for the npm package
# claude-code-controller judged alone through taskproof's target claude-code-controller@VERSION
# (installed from npm into the Claude Code cache on first use): the strict suite (run.json,
# run.md, run.txt), the race (race.txt, race-WORKLOAD.json per workload) and the fuzzer
# (fuzz.txt, fuzz.json, findings/), each run's load in load.txt.
#
#   reports/claude-code-controller/run.sh [VERSION]     # default 0.3.0
#
# TASKPROOF (default: taskproof on PATH) is the binary; RACE="--writers 4 --ops 20 --seed 1"
# the race's size, FUZZ="--time-limit 120 --seed 1 --shrink-time 20" the fuzzer's budget.
set -u
cd "$(dirname "$0")/../.."
TP=${TASKPROOF:-taskproof}
RACE=${RACE:---writers 4 --ops 20 --seed 1}
FUZZ=${FUZZ:---time-limit 120 --seed 1 --shrink-time 20}
version=${1:-0.3.0}
target=claude-code-controller@$version
out=reports/claude-code-controller/$version
mkdir -p "$out"
echo "run: $(cat /proc/loadavg)" > "$out/load.txt"
echo "== $target: run" >&2
"$TP" run --target "$target" --profile strict --color never \
  --report "json:$out/run.json" --report "md:$out/run.md" > "$out/run.txt" 2>&1
echo "(exit status $?)" >> "$out/run.txt"
: > "$out/race.txt"
rm -f "$out"/race-*.json
# Every workload whose parts the target declares: claim is not one (the package has none).
for w in metadata fields create edges complete; do
  echo "race $w: $(cat /proc/loadavg)" >> "$out/load.txt"
  echo "== $target: race $w" >&2
  # shellcheck disable=SC2086
  "$TP" race --target "$target" --workload "$w" $RACE \
    --report "json:$out/race-$w.json" >> "$out/race.txt" 2>&1
  echo "(exit status $?)" >> "$out/race.txt"
  echo >> "$out/race.txt"
done
echo "fuzz: $(cat /proc/loadavg)" >> "$out/load.txt"
echo "== $target: fuzz" >&2
rm -rf "$out/findings"
# shellcheck disable=SC2086
"$TP" fuzz --target "$target" --cases 100000 $FUZZ --color never --out "$out/findings" \
  --report "json:$out/fuzz.json" > "$out/fuzz.txt" 2>&1
echo "(exit status $?)" >> "$out/fuzz.txt"
# A finding another run keeps byte for byte is kept once (reports/README.md).
python3 scripts/lib/keep_once.py "$out/findings"
echo "end: $(cat /proc/loadavg)" >> "$out/load.txt"
