//! taskproof's conformance runner: scenario files, the suite, the runner and the built-in suite (docs/architecture.md, "Crates").
//!
//! Scenarios: the file model ([`format`](mod@format)) and its loader, placeholders, expectations, the sandbox each
//! scenario runs in, skip lists, and the runner that replays scenarios against a target.
//!
//! The library entry points, for the CLI and for tests such as the mutant self-test:
//! [`load_builtin`] (the shipped suite, built into the binary), [`load_paths`] /
//! [`load_dir`], then [`run_suite`] with a [`RunConfig`].

pub mod builtin;
pub mod expect;
mod export;
pub mod files;
mod finding;
pub mod format;
pub mod gate;
pub mod interpret;
pub mod lanes;
pub mod load;
pub mod observing;
pub mod runner;
pub mod sandbox;
pub mod skip;
pub mod suite;
pub mod vars;

pub use builtin::load_builtin;
pub use expect::Expect;
pub use format::{Action, Scenario, Step};
pub use gate::{gate, opaque_skips, undeclared};
pub use load::{LoadError, load_dir, load_file, load_paths, load_text};
pub use skip::{SkipError, SkipList};

pub use suite::{DEFAULT_START_AHEAD, RunConfig, early_sessions, probe, run_scenario, run_suite};
