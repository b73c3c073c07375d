//! taskproof's targets and sessions: in-process stores, adapter processes, the real Claude Code, MCP servers (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `crate::task::Task` names what it names in every crate.

pub use taskproof_core::{field, graph, layout, protocol, rule, task};
pub use taskproof_profile::{oracle, profile};
pub use taskproof_store::store;

pub mod target;
