//! taskproof's profiles (what a target is held to) and the in-memory oracle of a task store (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `crate::task::Task` names what it names in every crate.

pub use taskproof_core::{field, graph, layout, protocol, rule, task};
pub use taskproof_store::store;

pub mod oracle;
pub mod profile;
