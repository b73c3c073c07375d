//! cargo-fuzz target `file_race`: the property lives in `taskproof_fuzz::targets::file_race`, so plain
//! `cargo test` replays this target's corpus too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskproof_fuzz::targets::file_race(data));
