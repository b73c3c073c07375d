//! cargo-fuzz target `task_arbitrary`: the property lives in `taskproof_fuzz::targets::task_arbitrary`, so plain
//! `cargo test` replays this target's corpus too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskproof_fuzz::targets::task_arbitrary(data));
