//! taskproof: a conformance test harness, race harness and fuzzer for agent task stores.
//!
//! The flow: a scenario ([`scenario`]) is a list of steps; a [`target`] is the store under
//! test, in-process or an adapter process speaking the protocol of [`protocol`]; the runner
//! sends each step to the target and judges the answer against the [`profile`] the run holds
//! the target to; the result goes out as events to the reporters ([`report`]).
//! The reference behaviour is the strict [`store`], built on the wire types of [`task`].

pub mod check;
pub mod cli;
pub mod fuzz;
pub mod graph;
pub mod matrix;
pub mod model;
pub mod profile;
pub mod protocol;
pub mod race;
pub mod report;
pub mod scenario;
pub mod store;
pub mod target;
pub mod task;
