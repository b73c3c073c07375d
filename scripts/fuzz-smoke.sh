#!/usr/bin/env bash
# The bounded CI run of every cargo-fuzz target: builds fuzz/ on stable without a sanitizer
# (`-s none`), optimized and without debug assertions (`-O`, as ClusterFuzzLite and OSS-Fuzz
# build Rust targets; fuzz/Cargo.toml keeps overflow checks on in taskproof's own code), and
# runs each target for FUZZ_SECONDS (default 15) from its checked-in seeds, failing on the
# first crash. Prints each target's executions per second as libFuzzer counts them
# (executed inputs over the run's wall time, corpus loading included).
#
#   scripts/fuzz-smoke.sh                                  # every target, 15 s each
#   FUZZ_SECONDS=60 scripts/fuzz-smoke.sh store_ops file_race
#   FUZZ_REPORT=reports/fuzz-smoke.md scripts/fuzz-smoke.sh task_json protocol scenario_file
#   FUZZ_NEW_INPUTS=/tmp/found scripts/fuzz-smoke.sh task_json   # keep what it found
#
# FUZZ_REPORT, when set, also writes the table as Markdown to that file.
# The seeds (fuzz/corpus/TARGET/*) go in as libFuzzer's -seed_inputs, so the run's corpus
# lives in memory and nothing is written per new input: a smoke run's finds were thrown away
# at its end anyway, and writing (and, on each reduction, deleting) a file per new input
# cost the parser targets a fifth to a third of their executions. FUZZ_NEW_INPUTS=DIR
# writes them to DIR/TARGET/ instead (libFuzzer's output corpus folder), for growing a
# corpus; it is slower, so its rates are not comparable.
# A crash leaves its input under fuzz/artifacts/TARGET/; copy it to
# fuzz/regressions/TARGET/ (and fix the bug) so `cargo test` replays it from then on.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-15}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cd fuzz/fuzz_targets && ls -- *.rs | sed 's/\.rs$//' | sort)
fi

(cd fuzz && cargo fuzz build -O -s none)
bin_dir="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"

# The logs and timings go to a scratch folder, on a RAM-backed file system when there is one.
scratch_parent="${TMPDIR:-/tmp}"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    scratch_parent=/dev/shm
fi
scratch="$(mktemp -d -p "$scratch_parent")"
trap 'rm -rf "$scratch"' EXIT
status=0
rows=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/artifacts/$t"
    log="$scratch/$t.log"
    times="$scratch/$t.times"
    seeds=()
    for f in fuzz/corpus/"$t"/*; do
        if [ -f "$f" ]; then
            case "$f" in
                *,*) echo "fuzz-smoke: a seed name with a comma cannot be passed: $f" >&2; exit 2 ;;
            esac
            seeds+=("$f")
        fi
    done
    if [ ${#seeds[@]} -eq 0 ]; then
        echo "fuzz-smoke: fuzz/corpus/$t has no seeds" >&2
        exit 2
    fi
    corpus_args=("-seed_inputs=$(IFS=,; echo "${seeds[*]}")")
    if [ -n "${FUZZ_NEW_INPUTS:-}" ]; then
        mkdir -p "$FUZZ_NEW_INPUTS/$t"
        corpus_args=("$FUZZ_NEW_INPUTS/$t" "fuzz/corpus/$t")
    fi
    # The binary runs directly (cargo fuzz run would only rebuild-check and exec it), under
    # /usr/bin/time when present, so its CPU time is known: on a shared machine executions
    # per CPU second are the figure that does not move with the load.
    timer=()
    if [ -x /usr/bin/time ]; then
        timer=(/usr/bin/time -o "$times" -f '%U %S')
    fi
    if "${timer[@]}" "$bin_dir/$t" "${corpus_args[@]}" \
            -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" \
            >"$log" 2>&1; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
        per=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
        # The corpus libFuzzer held at the end (seeds and what it added), from its last line.
        units=$(grep -o 'DONE .*corp: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
        cpu="n/a"
        if [ -s "$times" ]; then
            cpu=$(awk -v n="$runs" '{ c = $1 + $2; if (c > 0) printf "%.0f", n / c; else print "n/a" }' "$times")
        fi
        echo "fuzz-smoke: $t: ok, $runs executions in ${seconds}s ($per/s), $cpu per CPU second, corpus of $units inputs"
        rows+=("| \`$t\` | $runs | $per | $cpu | $units |")
    else
        echo "fuzz-smoke: $t: FAILED" >&2
        tail -40 "$log" >&2
        rows+=("| \`$t\` | FAILED | | | |")
        status=1
    fi
done

if [ -n "${FUZZ_REPORT:-}" ]; then
    {
        echo "# cargo-fuzz smoke run"
        echo
        echo "Produced by \`FUZZ_SECONDS=$seconds scripts/fuzz-smoke.sh ${targets[*]}\`"
        echo "(\`cargo fuzz build -O -s none\`, stable Rust, $(nproc) cores shared with other"
        echo "builds; load average when written: $(cut -d' ' -f1-3 /proc/loadavg))."
        echo
        echo "| target | executions | executions/s (wall) | executions per CPU second | corpus at the end |"
        echo "|---|---|---|---|---|"
        printf '%s\n' "${rows[@]}"
    } >"$FUZZ_REPORT"
    echo "fuzz-smoke: wrote $FUZZ_REPORT"
fi
exit $status
