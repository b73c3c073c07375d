//! taskproof's background tasks: the reference runner, mutants, protocol, suite and race (docs/architecture.md, "Crates").
//!
//! Background tasks: the second task system of the seeds (markdown.engineering lesson 14,
//! "The Task System"): work started in the background, tracked through five statuses,
//! notified exactly once, its output kept in a file, its processes cleaned up. The contract
//! is docs/background.md (rules B1…B8); this module holds
//!
//! - what a background-task target is (`BgSession`) lives below both this crate and the real
//!   Claude Code target (crates/claude-code/src/background.rs), in
//!   [`taskproof_session::background`];
//! - [`runner`]: the reference runner, in-process, and its [`mutant`]s;
//! - [`protocol`]: the background protocol, both sides, and [`targets`]: target names and
//!   the factory that opens their sessions;
//! - [`scenario`]: the background scenario format and the built-in suite
//!   (background/scenarios/), and [`suite`]: their runner, judging by the rules into the
//!   store suite's report types;
//! - [`race`]: the kill/complete race, accounting for every task id;
//! - [`guardian`]: the process that kills a runner's tasks when the runner is SIGKILLed;
//! - [`procs`]: the process table, for the orphan checks.

pub mod guardian;
pub mod mutant;
pub mod procs;
pub mod protocol;
pub mod race;
pub mod runner;
pub mod scenario;
pub mod suite;
pub mod targets;

pub use mutant::BgMutant;
pub use runner::{Runner, RunnerOptions};
pub use targets::{BgOpen, BgTarget};
#[macro_use]
extern crate taskproof_core;
