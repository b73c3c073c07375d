//! taskproof's differential fuzzer (docs/architecture.md, "Crates").
//!
//! Fuzzing: the checks behind the cargo-fuzz targets under `fuzz/` (`targets`, with the
//! simulated file layer of `filesim`), and the generative differential fuzzer behind
//! `taskproof fuzz`. The cargo-fuzz bodies are built only with the `fuzz-targets` feature
//! (fuzz/ and the tests turn it on), so `arbitrary` is not in a plain build of the binary.

pub mod coverage;
pub mod driver;
#[cfg(feature = "fuzz-targets")]
pub mod filesim;
pub mod finding;
pub mod known;
pub mod oracle;
pub mod render;
pub mod resolve;
pub mod run;
pub mod strategy;
#[cfg(feature = "fuzz-targets")]
pub mod targets;
