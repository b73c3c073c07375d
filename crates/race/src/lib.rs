//! taskproof's race harness: concurrent writers, the history checker and its report (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `crate::task::Task` names what it names in every crate.

pub use taskproof_core::{field, graph, layout, protocol, rule, task};
pub use taskproof_profile::{oracle, profile};
pub use taskproof_report::report;
pub use taskproof_store::store;
pub use taskproof_target::target;

pub mod race;
