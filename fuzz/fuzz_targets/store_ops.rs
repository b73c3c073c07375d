//! cargo-fuzz target `store_ops`: the property lives in `taskproof_fuzz::targets::store_ops`, so plain
//! `cargo test` replays this target's corpus too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskproof_fuzz::targets::store_ops(data));
