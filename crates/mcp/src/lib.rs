//! taskproof's MCP code (docs/architecture.md, "Crates"): the server (`taskproof mcp`, the
//! reference store served to agents as tools) and the client the `mcp:` target speaks
//! through. Every use of rmcp is here, so its generic code is compiled once for both roles.
//! It needs the wire types and the store only, so it builds before the targets.
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `taskproof_core::task::Task` names what it names in every crate.

pub mod client;
pub mod mcp;
