//! cargo-fuzz target `protocol`: the property lives in `taskproof_fuzz::targets::protocol`, so plain
//! `cargo test` replays this target's corpus too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskproof_fuzz::targets::protocol(data));
