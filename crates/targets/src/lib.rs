//! taskproof's targets and sessions: in-process stores, adapter processes, the real Claude Code, MCP servers (docs/architecture.md, "Crates").
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `taskproof_core::task::Task` names what it names in every crate.

pub mod target;
