//! taskproof's audit of task folders on disk, repairs, and the Claude Code hook (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `crate::task::Task` names what it names in every crate.

pub use taskproof_core::{field, graph, layout, protocol, rule, task};
pub use taskproof_report::report;
pub use taskproof_store::store;

pub mod check;
