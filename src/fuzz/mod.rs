//! Fuzzing: the checks behind the cargo-fuzz targets under `fuzz/` ([`targets`], with the
//! simulated file layer of [`filesim`]), and the generative differential fuzzer behind
//! `taskproof fuzz`.

pub mod driver;
pub mod filesim;
pub mod finding;
pub mod known;
pub mod oracle;
pub mod run;
pub mod strategy;
pub mod targets;
