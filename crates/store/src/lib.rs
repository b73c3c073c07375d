//! taskproof's in-process task stores (docs/architecture.md, "Crates"): the strict reference
//! store, the naive store, the mutants, and what they share (safe file access, journals, the
//! change log, Claude Code's lock protocol). They speak the wire types of `taskproof-core`
//! and nothing above them.

pub mod store;
