#!/usr/bin/env bash
# Produces the checked-in race reports under reports/ with the project's own command.
#
#   scripts/race-reports.sh            every report (takes a while on 2 cores)
#   scripts/race-reports.sh NAME...    only these: reference reference-kill reference-cmd
#                                      reference-cmd-kill naive-metadata naive-create
#                                      mutants checker-speed mixed-claude-code
#
# Each report is a JSON file (format version 2) written by `taskproof race --report` and a
# Markdown file holding the exact command and its terminal summary.
set -euo pipefail
cd "$(dirname "$0")/.."

# RACE_REPORTS_BUILD=0 uses the release binary as it is (to run several invocations side by
# side from one build).
if [ "${RACE_REPORTS_BUILD:-1}" != 0 ]; then
  cargo build --release --quiet
fi
# A copy of its own for each invocation, so that rebuilding, or another invocation, while
# the reports run does not change the binary under them.
mkdir -p target/race-reports
BIN="$PWD/target/race-reports/taskproof.$$"
cp target/release/taskproof "$BIN"
trap 'rm -f "$BIN"' EXIT
OUT=reports
SEED=20261122
mkdir -p "$OUT"

# md NAME TITLE NOTE -- ARGS...: runs `taskproof ARGS`, keeps its summary and JSON report.
md() {
  local name=$1 title=$2 note=$3
  shift 4
  local json="$OUT/race-$name.json" file="$OUT/race-$name.md" status=0 start end out
  start=$(date +%s)
  out=$("$BIN" "$@" --report "json:$json") || status=$?
  end=$(date +%s)
  {
    echo "# $title"
    echo
    echo "$note"
    echo
    echo "Produced by \`scripts/race-reports.sh $name\` on $(date -u +%Y-%m-%d), $(nproc) cores"
    echo "shared with other jobs, release build; wall time $((end - start)) s; exit status $status."
    echo "Machine-readable: [race-$name.json](race-$name.json)."
    echo
    echo '```'
    local line
    line=$(printf '%q ' "$@")
    echo "taskproof ${line% }"
    echo '```'
    echo
    echo '```'
    echo "$out"
    echo '```'
  } >"$file"
  echo "$file: exit $status, $((end - start)) s"
}

SERVE="cmd:$BIN serve --no-fsync"
ALL=("$@")
run_if() { local n=$1; shift; if [ ${#ALL[@]} -eq 0 ] || [[ " ${ALL[*]} " == *" $n "* ]]; then "$@"; fi; }

run_if reference md reference "Reference store, in-process: every workload, 16 writers x 1,000 requests" \
  "Each writer is a store instance of its own on the shared root. fsync is off (\`--no-fsync\`) to fit the run on 2 cores; the lock and the atomic renames are the same as with it." \
  -- race --target reference --workload all --writers 16 --ops 1000 --seed $SEED --no-fsync --readers 1

run_if reference-kill md reference-kill "Reference store, in-process, with --kill" \
  "In-process sessions cannot be interrupted mid-request: a killed session's request runs to its end, its answer is discarded (the request is recorded as unknown), and the store instance is dropped and replaced. Real mid-request SIGKILLs are in [race-reference-cmd-kill](race-reference-cmd-kill.md). fsync off." \
  -- race --target reference --workload all --writers 16 --ops 1000 --seed $SEED --no-fsync --readers 1 --kill

run_if reference-cmd md reference-cmd "Reference store as 16 processes (cmd:taskproof serve adapter)" \
  "Every writer is its own \`taskproof serve adapter --no-fsync\` process on the shared root." \
  -- race --target "$SERVE" --workload all --writers 16 --ops 1000 --seed $SEED --readers 1

run_if reference-cmd-kill md reference-cmd-kill "Reference store as processes, SIGKILLed at random moments" \
  "About 1 request in 100 is followed by a SIGKILL of the writer's process group 0 to 3 ms after it was sent, so kills land before, during and after the store's work; a replacement process takes over. Acknowledged changes must survive; unanswered ones may or may not have happened." \
  -- race --target "$SERVE" --workload all --writers 16 --ops 1000 --seed $SEED --readers 1 --kill

run_if mixed-claude-code md mixed-reference-claude-code-2.1.112 "Mixed race: the reference and the real Claude Code 2.1.112 on one list, every workload, 5 runs" \
  "Two reference sessions (in-process, with Claude Code's lock directories, as \`taskproof serve mcp\` opens the store) and two sessions of the unmodified Claude Code 2.1.112 CLI (driven by the scripted model) write one list at once; writers 0-1 are the reference's, 2-3 Claude Code's. Each writer waits 50 ms between requests so that both overlap. Every lost acknowledged change is charged to one target (docs/race.md, \"Mixed races\"): the reference's count must be zero; Claude Code's comes from its unlocked TaskUpdate. fsync on. The other anomalies (torn writes, double claims, ...) are Claude Code's too: it truncates files before writing them and claims through TaskUpdate." \
  -- race --target reference --target claude-code@2.1.112 --writers 2 --ops 10 --workload all --think 0.05 --runs 5 --seed $SEED

run_if naive-metadata md naive-metadata "Naive store (Claude Code 2.1.17 model): metadata, 100 runs" \
  "Judged by the naive store's own profile, cc-2.1.17, which does not promise S18 or S19: what the runs find is reported as observations, and the exit status is 0. Runtime test 10's scenario at scale: 16 writers set metadata keys of their own on one task, 1,000 requests each, 100 runs with seeds $SEED to $((SEED + 99)). Most requests are refused as \`corrupt\`: the naive store truncates the file before writing it, and a writer that reads it in that moment finds it empty; the report counts refusals by kind. The repeat summary at the end gives the runs with loss and the median time from the first writer request to the first lost update (when the write that dropped it was answered)." \
  -- race --target naive --workload metadata --writers 16 --ops 1000 --runs 100 --seed $SEED --readers 1

run_if naive-create md naive-create "Naive store: create, 100 runs" \
  "Judged by cc-2.1.17 (S19 not promised): observations, exit 0. 16 writers create tasks, 100 each, 100 runs. Lost here means an acknowledged task that the end state lacks or holds with another writer's subject (its id was handed out twice)." \
  -- race --target naive --workload create --writers 16 --ops 100 --runs 100 --seed $SEED --readers 1

if [ ${#ALL[@]} -eq 0 ] || [[ " ${ALL[*]} " == *" mutants "* ]]; then
  md mutant-no-lock "Mutant no-lock (S19) caught by metadata" \
    "The reference store without its lock: read-modify-write races between writers." \
    -- race --target mutant:no-lock --workload metadata --writers 16 --ops 1000 --seed $SEED --no-fsync --readers 1
  md mutant-truncate-write "Mutant truncate-write (S18) caught by metadata's raw readers" \
    "The reference store writing files in place (truncate, then write) under its lock: writers never race, but a reader sees partial files." \
    -- race --target mutant:truncate-write --workload metadata --writers 16 --ops 1000 --seed $SEED --no-fsync --readers 1
  md mutant-claim-without-lock "Mutant claim-without-lock (S20) caught by claim" \
    "Claim checks under the lock but writes after releasing it: two claimers can both win." \
    -- race --target mutant:claim-without-lock --workload claim --writers 16 --ops 1000 --seed $SEED --no-fsync --readers 1
fi

if [ ${#ALL[@]} -eq 0 ] || [[ " ${ALL[*]} " == *" checker-speed "* ]]; then
  start=$(date +%s)
  table=$(cargo bench --quiet --bench checker -- table)
  end=$(date +%s)
  {
    echo "# Race checker speed"
    echo
    echo "The whole checker (every anomaly count and the per-task linearizability search) on"
    echo "synthetic linearizable histories: 16 sessions with overlapping requests that set one"
    echo "of 128 metadata keys, or the owner, of one of N tasks; 1% of requests unanswered (as"
    echo "killed ones are); in the last rows one acknowledged update is dropped from the final"
    echo "state, which the search must prove unexplainable. Produced by"
    echo "\`scripts/race-reports.sh checker-speed\` (\`cargo bench --bench checker -- table\`) on"
    echo "$(date -u +%Y-%m-%d), $(nproc) cores shared with other jobs, release build;"
    echo "$((end - start)) s in all, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Generating each history is timed apart and not counted in"
    echo "the check time. The check's processor time (all threads) is given beside its wall"
    echo "clock, which on this shared machine measures the load as much as the checker;"
    echo "operations per second and \"vs the smaller size\" (a row against the same shape"
    echo "measured earlier in the same run at a tenth of the operations: linear is 10x) use it."
    echo
    echo "$table"
  } >"$OUT/race-checker-speed.md"
  echo "$OUT/race-checker-speed.md"
fi
