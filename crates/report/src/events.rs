//! The interface between the runner and the reporters: the runner says what happened, in
//! order, and every reporter is a view of these events (after nextest's reporter events).
//! Events are delivered on one thread, in the order results arrive; `RunFinished` carries
//! the whole suite sorted by scenario id, for reports that are written at the end.
//!
//! The events of a run, in order:
//!
//! - [`Event::RunStarted`] once, with the target's `hello` (or why it failed);
//! - per scenario, as it ends: a [`Event::StepFinished`] for each judged request (each
//!   `send` step whose answer came back), in step order, then [`Event::ScenarioFinished`];
//!   scenarios running at once do not interleave their steps;
//! - [`Event::RunFinished`] once, with every result.
//!
//! The other commands are producers of the same stream: `taskproof race` emits one
//! [`Event::RaceFinished`] with its report, `taskproof check` one [`Event::CheckFinished`],
//! and `taskproof fuzz`, as its loop goes (`fuzz::run::fuzz`, through its own typed
//! `FuzzEvent`s):
//!
//! - [`Event::FuzzStarted`] once, with the plan;
//! - [`Event::FuzzProgress`] after every case, and when a new divergence starts shrinking;
//! - [`Event::FuzzFinding`] for each distinct divergence: found (shrunk, replayed, written),
//!   not confirmed, or known and left out;
//! - [`Event::FuzzFinished`] once, with the report.
//!
//! A producer's reports and moments travel as [`Document`]s: the producer renders them
//! (terminal text, JSON report, Markdown summary), so the reporters print and write them
//! without knowing the producers' types, and `report` imports no producer.
//!
//! Colour, terminal and progress are decided once, in [`super::output`], for all of them.
//! The terminal reporter shows each; the JSON reporter writes the race or fuzz report to its
//! file, the Markdown reporter the run or fuzz summary.
//!
//! A step event's shape is deliberately plain, for consumers that record or compare
//! answers (recorded profiles, the matrix): the scenario id, and a [`StepRecord`] holding
//! the step index, the session, the request as sent, the answer (a
//! [`taskproof_core::protocol::Answer`]: the JSON as received and the decoded
//! [`taskproof_core::protocol::Response`]), the expectation as judged (as JSON, as the scenario file
//! writes it) and the verdict
//! ([`StepVerdict::Pass`], or [`StepVerdict::Fail`] with what differs).

use std::path::PathBuf;

use serde_json::Value;

#[cfg(doc)]
use crate::result::StepVerdict;
use crate::result::{ScenarioResult, StepRecord, SuiteResult, TargetInfo};
use taskproof_profile::RunProfile;

/// Something that happened during a run.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// The target answered (or failed) its hello; `total` scenarios will be reported.
    RunStarted {
        target: &'a TargetInfo,
        profile: &'a RunProfile,
        total: usize,
    },
    /// A judged request of scenario `scenario` (sent before its `ScenarioFinished`).
    StepFinished {
        scenario: &'a str,
        step: &'a StepRecord,
    },
    /// One scenario is done; `done` of `total` so far.
    ScenarioFinished {
        result: &'a ScenarioResult,
        done: usize,
        total: usize,
    },
    /// Every scenario is done.
    RunFinished { suite: &'a SuiteResult },
    /// `taskproof race` ran every workload.
    RaceFinished { report: &'a dyn Document },
    /// `taskproof check` audited (and, when asked, repaired) its folders.
    CheckFinished { report: &'a dyn Document },
    /// `taskproof fuzz` starts: the target, the model, the seed; `cases` cases will run.
    FuzzStarted { plan: &'a dyn Document, cases: u32 },
    /// `cases` cases are done; `message` says what the run is doing when a new divergence
    /// starts shrinking (the progress bar shows it).
    FuzzProgress {
        cases: u32,
        message: Option<&'a str>,
    },
    /// A distinct divergence, as it came out.
    FuzzFinding { finding: &'a dyn Document },
    /// The fuzz run is done.
    FuzzFinished { report: &'a dyn Document },
}

/// What a producer (race, check, fuzz) emits, rendered by the producer: the reporters call
/// these and know nothing else of it.
pub trait Document: std::fmt::Debug {
    /// The lines the terminal shows, each ending in a newline; `color` paints.
    fn terminal(&self, color: bool) -> String;

    /// The JSON report, when the document is one (a command's last event).
    fn json(&self) -> Option<Value> {
        None
    }

    /// The Markdown summary, when the document has one.
    fn markdown(&self) -> Option<String> {
        None
    }
}

/// A report that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("failed to write the report {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("failed to write to the terminal: {0}")]
    Terminal(std::io::Error),
    #[error("failed to serialize the JUnit report: {0}")]
    Junit(String),
}

/// A view of a run.
pub trait Reporter {
    fn report(&mut self, event: &Event<'_>) -> Result<(), ReportError>;
}

/// A file report's write at its command's last event: `text` when the report has something
/// to say about the event, nothing otherwise.
pub fn write_final(path: &std::path::Path, text: Option<String>) -> Result<(), ReportError> {
    match text {
        Some(text) => write_report(path, text.as_bytes()),
        None => Ok(()),
    }
}

/// Writes `bytes` to `path`, creating its folder, naming the path in the error.
pub fn write_report(path: &std::path::Path, bytes: &[u8]) -> Result<(), ReportError> {
    let write = || -> std::io::Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)
    };
    write().map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}
