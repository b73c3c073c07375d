#!/bin/bash -eu
# Builds every cargo-fuzz target under fuzz/ for ClusterFuzzLite (or OSS-Fuzz) and copies
# the binaries to $OUT, each with its checked-in seed corpus as NAME_seed_corpus.zip.
#
# Inside the builder image SRC, OUT and SANITIZER are set by ClusterFuzzLite (SANITIZER is
# `address` for Rust, which needs the image's nightly toolchain). Outside docker it runs the
# same way with them set by hand; on stable Rust use SANITIZER=none:
#
#   SRC=$(mktemp -d) OUT=$(mktemp -d) SANITIZER=none .clusterfuzzlite/build.sh
#
# Outside docker the checkout is this script's repository unless $SRC/taskproof exists.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
project="$SRC/taskproof"
if [ ! -d "$project/fuzz" ]; then
    project="$here"
fi
sanitizer="${SANITIZER:-address}"
cd "$project/fuzz"

# -O: optimized, without debug assertions, as the fuzzing services build Rust targets
# (fuzz/Cargo.toml keeps overflow checks on in this profile).
cargo fuzz build -O --sanitizer "$sanitizer"

triple="$(rustc -vV | sed -n 's/^host: //p')"
bin_dir="target/$triple/release"
for src in fuzz_targets/*.rs; do
    name="$(basename "$src" .rs)"
    cp "$bin_dir/$name" "$OUT/"
    if [ -d "corpus/$name" ] && command -v zip >/dev/null; then
        (cd "corpus/$name" && zip -q -j "$OUT/${name}_seed_corpus.zip" ./*)
    fi
    echo "build.sh: $OUT/$name"
done
