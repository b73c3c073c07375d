#!/usr/bin/env bash
# Times clean release builds of two commits side by side (issue 23: the crate layout must
# not make `cargo build --release` from clean slower than the one-crate tree). A benchmark:
# it times whole cargo processes; no test times anything.
#
#   scripts/build-times.sh                 # 495a0da (the last one-crate tree) against HEAD, 2 pairs
#   scripts/build-times.sh BASE [NEW]      # any two commits
#   PAIRS=4 scripts/build-times.sh         # more pairs
#   LLVM_LINES=1 scripts/build-times.sh    # also count each tree's LLVM IR (cargo llvm-lines)
#
# Each build is `cargo build --release --locked` of a `git worktree` of the commit (so an
# uncommitted change is not measured) into a target folder of its own, emptied before the
# build. The two commits alternate within each pair and the order flips from pair to pair,
# so a machine that slows down during the series does not favour one of them. Each line
# gives the load average at the start: on a shared machine the load is part of the figure,
# and only the ratio within a pair compares like with like. CPU is user + system seconds of
# cargo and everything it ran (bash's `times`). Dependencies come from cargo's registry
# cache; the first build of a commit may download them, so run it once before timing on a
# fresh machine (or read pair 1 with that in mind).
#
# Output: a line a build, then a line a pair with its ratios (NEW / BASE), then the medians.
# A failed build stops the series with its log's tail; the worktrees and target folders are
# removed on every exit.
set -euo pipefail

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h | --help) usage; exit 0 ;; esac
[ $# -le 2 ] || { usage >&2; exit 2; }

cd "$(dirname "$0")/.."
repo="$PWD"
base_rev="${1:-495a0da}"
new_rev="${2:-HEAD}"
pairs="${PAIRS:-2}"
case "$pairs" in '' | *[!0-9]* | 0) echo "build-times: PAIRS must be a whole number above 0, not '$pairs'" >&2; exit 2 ;; esac
if [ -n "${LLVM_LINES:-}" ] && ! command -v cargo-llvm-lines >/dev/null; then
    echo "build-times: LLVM_LINES needs cargo-llvm-lines (cargo install cargo-llvm-lines --locked)" >&2
    exit 2
fi

resolve() {
    git -C "$repo" rev-parse --verify --quiet "$1^{commit}" ||
        { echo "build-times: '$1' is not a commit of this repository" >&2; exit 2; }
}
base=$(resolve "$base_rev")
new=$(resolve "$new_rev")

work="$(mktemp -d "${TMPDIR:-/tmp}/build-times.XXXXXX")"
building=
cleanup() {
    if [ -n "$building" ]; then
        kill -TERM -- "-$building" 2>/dev/null || true
        wait "$building" 2>/dev/null || true
    fi
    git -C "$repo" worktree remove --force "$work/base" >/dev/null 2>&1 || true
    git -C "$repo" worktree remove --force "$work/new" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
git -C "$repo" worktree add --detach --quiet "$work/base" "$base"
git -C "$repo" worktree add --detach --quiet "$work/new" "$new"

# shellcheck source=scripts/lib/children-cpu.sh
. scripts/lib/children-cpu.sh

# grouped LOG DIR CMD...: runs CMD in DIR, its output to LOG, in a process group of its own
# (so that an interrupted series stops every rustc too) and waits for it; returns its status.
grouped() {
    local log="$1" dir="$2" status=0
    shift 2
    set -m
    (cd "$dir" && exec "$@") >"$log" 2>&1 &
    building=$!
    set +m
    wait "$building" || status=$?
    building=
    return "$status"
}

# build NAME: a clean release build of $work/NAME; prints "WALL CPU" and appends them to
# $work/NAME.runs.
build() {
    local name="$1" t0 t1 c0 c1 load started
    rm -rf "$work/target-$name"
    load=$(cut -d' ' -f1 /proc/loadavg)
    started=$(date -u +%H:%M)
    children_cpu "$work/times" >"$work/cpu0"
    t0=$(date +%s.%N)
    if ! grouped "$work/$name.log" "$work/$name" env CARGO_TARGET_DIR="$work/target-$name" cargo build --release --locked; then
        echo "build-times: the release build of $name ($(git -C "$work/$name" rev-parse --short HEAD)) failed:" >&2
        tail -20 "$work/$name.log" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    children_cpu "$work/times" >"$work/cpu1"
    c0=$(cat "$work/cpu0")
    c1=$(cat "$work/cpu1")
    rm -rf "$work/target-$name"
    awk -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" 'BEGIN { printf "%.1f %.1f\n", b - a, d - c }' |
        tee -a "$work/$name.runs" >"$work/last"
    printf '  %-4s %s  %6.1f s wall  %6.1f CPU s  load %s at the start (%s UTC)\n' \
        "$name" "$(git -C "$work/$name" rev-parse --short HEAD)" \
        "$(cut -d' ' -f1 "$work/last")" "$(cut -d' ' -f2 "$work/last")" "$load" "$started"
}

echo "clean release builds, base $(git -C "$repo" rev-parse --short "$base") against new $(git -C "$repo" rev-parse --short "$new"), $pairs pair(s), $(nproc) CPUs"
for i in $(seq 1 "$pairs"); do
    echo "pair $i"
    if [ $((i % 2)) -eq 1 ]; then build base; build new; else build new; build base; fi
    paste -d' ' <(tail -1 "$work/base.runs") <(tail -1 "$work/new.runs") |
        awk '{ printf "  ratio new/base: %.2fx wall, %.2fx CPU\n", $3 / $1, $4 / $2 }' |
        tee -a "$work/ratios"
done

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "median ratio of $pairs pair(s): $(awk '{ print $3 }' "$work/ratios" | tr -d x | median)x wall," \
    "$(awk '{ print $5 }' "$work/ratios" | tr -d x | median)x CPU"

if [ -n "${LLVM_LINES:-}" ]; then
    # ir_lines NAME: prints the LLVM IR lines of every library crate of the tree, summed; a
    # crate that gives no total stops the script with its log's tail.
    ir_lines() {
        local tree="$work/$1" total=0 n pkg
        (cd "$tree" && cargo metadata --no-deps --format-version 1 --locked) |
            python3 -c 'import json,sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"] if any("lib" in t["kind"] for t in p["targets"])))' \
                >"$work/crates"
        if ! [ -s "$work/crates" ]; then
            echo "build-times: cargo metadata named no library crate in $1" >&2
            exit 1
        fi
        while read -r pkg; do
            grouped "$work/ir.log" "$tree" env CARGO_TARGET_DIR="$work/target-ir-$1" \
                cargo llvm-lines --release --locked -p "$pkg" --lib || true
            n=$(awk '$NF == "(TOTAL)" { print $1; exit }' "$work/ir.log")
            if [ -z "$n" ]; then
                echo "build-times: cargo llvm-lines gave no total for $pkg in $1 ($(git -C "$tree" rev-parse --short HEAD)):" >&2
                tail -20 "$work/ir.log" >&2
                exit 1
            fi
            total=$((total + n))
        done <"$work/crates"
        rm -rf "$work/target-ir-$1"
        echo "$total"
    }
    # Not `$(ir_lines …)`: in a subshell an interrupt could not reach the running crate.
    ir_lines base >"$work/ir.base"
    ir_lines new >"$work/ir.new"
    base_ir=$(cat "$work/ir.base")
    new_ir=$(cat "$work/ir.new")
    echo "LLVM IR lines of the library crates: base $base_ir, new $new_ir" \
        "$(awk -v a="$base_ir" -v b="$new_ir" 'BEGIN { if (a > 0) printf "(%.2fx)", b / a }')"
fi
