//! cargo-fuzz target `scenario_file`: the property lives in `taskproof_fuzz::targets::scenario_file`, so plain
//! `cargo test` replays this target's corpus too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskproof_fuzz::targets::scenario_file(data));
