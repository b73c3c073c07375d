//! taskproof's race harness: concurrent writers, the history checker and its report (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `taskproof_core::task::Task` names what it names in every crate.

pub mod race;
