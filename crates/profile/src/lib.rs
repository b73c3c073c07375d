//! taskproof's profiles (what a target is held to) and the in-memory oracle of a task store (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `taskproof_core::task::Task` names what it names in every crate.

pub mod oracle;
pub mod profile;
