//! taskproof's background tasks: the reference runner, mutants, protocol, suite and race (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `crate::task::Task` names what it names in every crate.

#[macro_use]
extern crate taskproof_core;

pub use taskproof_core::{field, graph, layout, protocol, rule, task};
pub use taskproof_profile::{oracle, profile};
pub use taskproof_report::report;
pub use taskproof_store::store;
pub use taskproof_target::target;

pub mod background;
