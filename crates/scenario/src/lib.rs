//! taskproof's conformance runner: scenario files, the suite, the runner and the built-in suite (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `taskproof_core::task::Task` names what it names in every crate.

pub mod scenario;
