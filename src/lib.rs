//! taskproof: a conformance test harness, race harness and fuzzer for agent task stores.
//!
//! The flow (docs/architecture.md draws it):
//!
//! ```text
//! scenario ──► target ──► events ──► report
//! (load, suite,  (sessions     (report::events:   (terminal, JSON,
//!  runner)        speaking      one stream)         JUnit, Markdown)
//!                 protocol)        ▲
//!          race, check, fuzz ──────┘   further producers of the same events
//! ```
//!
//! A scenario ([`taskproof_scenario`]) is a list of steps; a target ([`taskproof_targets`])
//! is the store under test, in-process or an adapter process speaking the protocol of
//! [`taskproof_core::protocol`]; the runner sends each step to the target, decodes the answer
//! once ([`taskproof_core::protocol::Answer`]) and judges it against the profile
//! ([`taskproof_profile`]) the run holds the target to; results go out as
//! [`taskproof_report::Event`]s to the reporters ([`taskproof_reporters`]), with terminal,
//! colour and CI decided once ([`taskproof_report::output`]). The race harness
//! ([`taskproof_race`]), `check` ([`taskproof_check`]) and the fuzzer ([`taskproof_fuzz`])
//! emit their results into the same stream (fuzz its start, progress, findings and end).
//! [`taskproof_matrix`] reads the JSON reports of many runs; [`taskproof_mcp`] serves the
//! reference store ([`taskproof_store`]) to agents. Shared vocabulary, in
//! [`taskproof_core`]: the rules, the layouts, the dependency graph and its wording, and the
//! one JSON field reader behind the wire types and the scenario loader.
//!
//! This crate holds the commands ([`cli`]) and what needs several producers at once:
//! [`bisect`], [`timeline`], [`record`] and the register of [`claims`]. Each crate is named
//! by its own name (docs/architecture.md, "Crates"); none re-exports another.

pub mod bisect;
pub mod claims;
pub mod cli;
pub mod record;
pub mod timeline;
