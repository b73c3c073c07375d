//! taskproof's background tasks: the reference runner, mutants, protocol, suite and race (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `taskproof_core::task::Task` names what it names in every crate.

#[macro_use]
extern crate taskproof_core;

pub mod background;
