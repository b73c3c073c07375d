//! taskproof's conformance matrix (docs/architecture.md, "Crates"): the JSON reports of many
//! runs, read back through the report schema, rendered as one table. It needs the schema and
//! race's report types only, so it builds beside the runner's crates.
//!
//! The modules of the crates below are re-exported under their own names, so that
//! `taskproof_report::report::schema` names what it names in every crate.

pub mod matrix;
