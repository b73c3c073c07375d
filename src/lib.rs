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
//! A scenario ([`scenario`]) is a list of steps; a [`target`] is the store under test,
//! in-process or an adapter process speaking the protocol of [`protocol`]; the runner sends
//! each step to the target, decodes the answer once ([`protocol::Answer`]) and judges it
//! against the [`profile`] the run holds the target to; results go out as
//! [`report::Event`]s to the reporters ([`report`]), with terminal, colour and CI decided
//! once ([`report::output`]). [`race`], [`check`] and [`fuzz`] emit their results into the
//! same stream (fuzz its start, progress, findings and end). [`matrix`] reads the JSON
//! reports of many runs; [`mcp`] serves the reference [`store`] to agents. Shared
//! vocabulary: the rules ([`rule`]), the layouts ([`layout`]), the dependency graph and its
//! wording ([`graph`]), and the one JSON field reader ([`field`]) behind the wire types of
//! [`task`] and the scenario loader.

// The crates below this one (docs/architecture.md, "Crates"), under the module names the
// code has always used, so that `taskproof_core::task::Task` and `taskproof::task::Task` still name
// the same thing.

pub mod bisect;
pub mod claims;
pub mod cli;
pub mod record;
pub mod timeline;
