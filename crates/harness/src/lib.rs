//! taskproof's harness (docs/architecture.md, "Crates"): everything between the stores and
//! the views of a run. Its modules, each using only the ones listed before it:
//!
//! - [`profile`]: what a target is held to; [`model`]: the in-memory oracle;
//! - [`report`]: the report schema, the event stream and the `Document` trait;
//! - [`target`]: targets and sessions (and the background-session interface);
//! - [`race`]: the race harness; [`background`]: background tasks;
//! - [`scenario`]: the conformance runner; [`fuzz`]: the fuzzer; [`check`]: task folders.
//!
//! `/tmp/modgraph.py`-style checks (docs/architecture.md) keep these free of cycles; the
//! crates below ([`taskproof_core`], [`taskproof_store`]) and above (`taskproof-reporters`,
//! `taskproof`) are kept apart by the compiler.

#[macro_use]
extern crate taskproof_core;

pub use taskproof_core::{field, graph, layout, protocol, rule, task};
pub use taskproof_store::store;

pub mod background;
pub mod check;
pub mod fuzz;
pub mod model;
pub mod profile;
pub mod race;
pub mod report;
pub mod scenario;
pub mod target;
