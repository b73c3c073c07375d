#!/usr/bin/env bash
# Measures the fuzzers and writes reports/fuzz-results.md and reports/fuzz-results.json:
#   - taskproof fuzz against the reference, 10,000 cases (must find nothing);
#   - every mutant of the reference store: found or not, the written scenario replayed
#     against the mutant (must fail) and the reference (must pass), and kept under
#     reports/fuzz-findings/ unless another run in reports/ keeps the same bytes;
#   - cases per second in-process and through `cmd:taskproof serve adapter`;
#   - executions per second of every cargo-fuzz target (via scripts/fuzz-smoke.sh).
#
#   scripts/fuzz-report.sh                 # FUZZ_SECONDS=30 per cargo-fuzz target
set -euo pipefail

cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="$PWD/target/release/taskproof"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
seed=1
json_rows=()
md_rows=()

now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }

# The reference, 10,000 cases.
t0=$(now)
"$bin" fuzz --cases 10000 --seed "$seed" --out "$work/ref" >"$work/ref.log" 2>&1 && ref_status=0 || ref_status=$?
t1=$(now)
ref_rate=$(rate 10000 "$t0" "$t1")
ref_line=$(tail -1 "$work/ref.log")

# Throughput in-process and through processes, same seed (fewer cases for processes).
t0=$(now); "$bin" fuzz --cases 1000 --seed 2 --out "$work/tp" >/dev/null 2>&1; t1=$(now)
inproc_rate=$(rate 1000 "$t0" "$t1")
t0=$(now); "$bin" fuzz --target "cmd:exec '$bin' serve --no-fsync" --cases 200 --seed 2 --out "$work/tp" >/dev/null 2>&1; t1=$(now)
cmd_rate=$(rate 200 "$t0" "$t1")

# Every mutant.
rm -rf reports/fuzz-findings
mkdir -p reports/fuzz-findings
# The mutant names, as Mutant::name spells them.
mutants=$(grep -o 'Mutant::[A-Za-z]* => "[a-z-]*"' crates/store/src/store/mutant.rs | sed 's/.*"\(.*\)"/\1/' | sort -u)
for m in $mutants; do
    out="$work/m-$m"
    t0=$(now)
    # The first finding only: the table shows how soon each mutant is caught.
    "$bin" fuzz --target "mutant:$m" --cases 2000 --seed "$seed" --max-findings 1 --out "$out" >"$out.log" 2>&1 && st=0 || st=$?
    t1=$(now)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    if [ "$st" -eq 1 ]; then
        file=$(ls "$out"/*.json)
        cases=$(grep -o 'divergence after [0-9]* cases' "$out.log" | grep -o '[0-9]*')
        rules=$(grep -m1 '^rules:' "$out.log" | sed 's/^rules: \([^(]*\) (.*/\1/')
        fp=$(basename "$file" .json)
        # A scenario another run already keeps byte for byte (a real target's finding) is
        # linked there, not copied (reports/README.md, "No two identical files").
        kept=$(python3 scripts/lib/keep_once.py --find "$file")
        if [ -z "$kept" ]; then
            cp "$file" reports/fuzz-findings/
            kept=reports/fuzz-findings/$fp.json
        fi
        "$bin" run "$file" --target "mutant:$m" >/dev/null 2>&1 && vm=0 || vm=$?
        "$bin" run "$file" --target reference >/dev/null 2>&1 && vr=0 || vr=$?
        replay=$([ "$vm" -eq 1 ] && [ "$vr" -eq 0 ] && echo "fails on mutant, passes on reference" || echo "UNEXPECTED (mutant $vm, reference $vr)")
        json_rows+=("{\"mutant\":\"$m\",\"found\":true,\"cases\":$cases,\"seconds\":$secs,\"rules\":\"$rules\",\"scenario\":\"$fp\",\"replay_mutant_exit\":$vm,\"replay_reference_exit\":$vr}")
        md_rows+=("| \`$m\` | found after $cases cases (${secs} s) | $rules | [\`$fp\`](${kept#reports/}) | $replay |")
    else
        json_rows+=("{\"mutant\":\"$m\",\"found\":false,\"cases\":2000,\"seconds\":$secs}")
        md_rows+=("| \`$m\` | not found in 2000 cases (${secs} s) | | | only concurrent runs expose it |")
    fi
done

# cargo-fuzz targets.
smoke_seconds="${FUZZ_SECONDS:-30}"
FUZZ_SECONDS="$smoke_seconds" scripts/fuzz-smoke.sh >"$work/smoke.log" 2>&1 || true
fuzz_json=()
fuzz_md=()
while read -r _ t _ runs _ _ _ per _; do
    t=${t%:}
    per=${per#(}; per=${per%/s),}
    fuzz_json+=("{\"target\":\"$t\",\"executions\":$runs,\"seconds\":$smoke_seconds,\"per_second\":$per}")
    fuzz_md+=("| \`$t\` | $per |")
done < <(grep '^fuzz-smoke: .*: ok' "$work/smoke.log")

mkdir -p reports
{
    echo '{"format":1,'
    echo " \"machine\":\"$(nproc) cores, shared with other builds\","
    echo " \"reference\":{\"cases\":10000,\"seed\":$seed,\"exit\":$ref_status,\"cases_per_second\":$ref_rate},"
    echo " \"throughput\":{\"in_process_cases_per_second\":$inproc_rate,\"cmd_serve_cases_per_second\":$cmd_rate},"
    echo " \"mutants\":[$(IFS=,; echo "${json_rows[*]}")],"
    echo " \"cargo_fuzz\":[$(IFS=,; echo "${fuzz_json[*]}")]}"
} >reports/fuzz-results.json
{
    echo "# Fuzzing results"
    echo
    echo "Produced by \`scripts/fuzz-report.sh\` (release build, $(nproc) cores shared with other"
    echo "builds, so rates are lower bounds). See docs/fuzzing.md for what each fuzzer checks."
    echo
    echo "## \`taskproof fuzz\` against the reference"
    echo
    echo "\`taskproof fuzz --cases 10000 --seed $seed\` (exit $ref_status): $ref_line"
    echo
    echo "## Throughput"
    echo
    echo "| target | cases/s |"
    echo "|---|---|"
    echo "| \`reference\` (in-process store on real files, fsync off), 1000 cases | $inproc_rate |"
    echo "| \`cmd:taskproof serve adapter --no-fsync\` (one process per session, real SIGKILL on restart), 200 cases | $cmd_rate |"
    echo
    echo "## Mutants"
    echo
    echo "\`taskproof fuzz --target mutant:NAME --cases 2000 --seed $seed\`; the written scenario is"
    echo "replayed with \`taskproof run\` against the mutant and against the reference. The"
    echo "written scenarios are kept in [fuzz-findings/](fuzz-findings/), or where another run"
    echo "keeps the same file."
    echo
    echo "| mutant | result | rules | scenario | replay |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${md_rows[@]}"
    echo
    echo "## cargo-fuzz targets"
    echo
    echo "\`scripts/fuzz-smoke.sh\` with FUZZ_SECONDS=$smoke_seconds (\`cargo fuzz run -s none\`, stable)."
    echo
    echo "| target | executions/s |"
    echo "|---|---|"
    printf '%s\n' "${fuzz_md[@]}"
} >reports/fuzz-results.md
echo "wrote reports/fuzz-results.md and reports/fuzz-results.json"
