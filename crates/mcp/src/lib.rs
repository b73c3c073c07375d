//! taskproof's MCP server: the reference store served to agents as tools (docs/architecture.md,
//! "Crates"). It needs the wire types and the store only, so it builds beside the harness's
//! crates instead of after them.
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `crate::task::Task` names what it names in every crate.

pub use taskproof_core::{protocol, task};
pub use taskproof_store::store;

pub mod mcp;
