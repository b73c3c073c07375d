//! cargo-fuzz target `task_json`: the property lives in `taskproof_fuzz::targets::task_json`, so plain
//! `cargo test` replays this target's corpus too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskproof_fuzz::targets::task_json(data));
