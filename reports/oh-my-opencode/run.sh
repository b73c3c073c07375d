#!/bin/sh
# Makes the reports of oh-my-opencode under reports/oh-my-opencode/: the plugin judged alone
# through taskproof's target oh-my-opencode@VERSION (OpenCode 1.18.33 with the plugin, both
# from npm into taskproof's cache on first use) into VERSION/ (the strict suite: run.json,
# run.md, run.txt, and target.json, the conformance matrix's label for the folder; the race: race.json, race.txt; the fuzzer: fuzz.json, fuzz.txt, findings/),
# and on one list with the real Claude Code into mixed/ (claude-code-CC.{json,md,txt}), each
# step's load in the folder's load.txt.
#
#   reports/oh-my-opencode/run.sh [VERSION] [CLAUDE_CODE_VERSION...]   # default 4.19.4 2.1.332 2.1.112
#
# TASKPROOF (default: taskproof on PATH) is the binary; RACE="--writers 2 --ops 6" the race's
# size (every session starts an OpenCode: 7 to 65 s), MIXED="--writers 2 --ops 6 --think 0.15"
# the mixed race's, FUZZ="--time-limit 300 --seed 1" the fuzzer's budget.
set -u
cd "$(dirname "$0")/../.."
TP=${TASKPROOF:-taskproof}
RACE=${RACE:---writers 2 --ops 6}
MIXED=${MIXED:---writers 2 --ops 6 --think 0.15}
FUZZ=${FUZZ:---time-limit 300 --seed 1}
version=${1:-4.19.4}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- 2.1.332 2.1.112
target=oh-my-opencode@$version
out=reports/oh-my-opencode/$version
mkdir -p "$out" reports/oh-my-opencode/mixed
echo "run: $(cat /proc/loadavg)" > "$out/load.txt"
# The conformance matrix reads this folder as a column (reports/matrix/index.json names
# ../oh-my-opencode/VERSION); target.json is its label, as `taskproof matrix` writes it.
printf '{\n  "format_version": 1,\n  "label": "oh-my-opencode-%s",\n  "spec": "%s",\n  "profile": "strict"\n}\n' \
  "$version" "$target" > "$out/target.json"
echo "== $target: run" >&2
"$TP" run --target "$target" --profile strict --jobs 2 --timeout 60 --color never \
  --report "json:$out/run.json" --report "md:$out/run.md" > "$out/run.txt" 2>&1
echo "(exit status $?)" >> "$out/run.txt"
echo "race: $(cat /proc/loadavg)" >> "$out/load.txt"
echo "== $target: race" >&2
# shellcheck disable=SC2086
"$TP" race --target "$target" --workload all --timeout 60 $RACE \
  --report "json:$out/race.json" > "$out/race.txt" 2>&1
echo "(exit status $?)" >> "$out/race.txt"
echo "fuzz: $(cat /proc/loadavg)" >> "$out/load.txt"
echo "== $target: fuzz" >&2
rm -rf "$out/findings"
# shellcheck disable=SC2086
"$TP" fuzz --target "$target" $FUZZ --color never --out "$out/findings" \
  --report "json:$out/fuzz.json" > "$out/fuzz.txt" 2>&1
echo "(exit status $?)" >> "$out/fuzz.txt"
# A finding another run keeps byte for byte is kept once (reports/README.md).
python3 scripts/lib/keep_once.py "$out/findings"
for cc in "$@"; do
  m=reports/oh-my-opencode/mixed/claude-code-$cc
  echo "mixed $cc: $(cat /proc/loadavg)" >> reports/oh-my-opencode/mixed/load.txt
  echo "== claude-code@$cc + $target: race" >&2
  # shellcheck disable=SC2086
  "$TP" race --target "claude-code@$cc" --target "$target" --workload all --timeout 90 $MIXED \
    --report "json:$m.json" --report "md:$m.md" > "$m.txt" 2>&1
  echo "(exit status $?)" >> "$m.txt"
done
echo "end: $(cat /proc/loadavg)" >> "$out/load.txt"
