//! The schema of the JSON reports: serde types that write each report and are the one way
//! taskproof reads one back (docs/reports.md, "One schema"). A producer fills these types
//! from what it found and serializes them; `matrix` and `timeline` deserialize them. Field
//! order is the order the files are written in (serde_json keeps it), so a report written
//! through these types has the bytes the `json!` writers before them wrote.
//!
//! | report | written by | type | `format_version` |
//! |---|---|---|---|
//! | `run --report json:` (store and background suites, `hold`'s runs) | `taskproof_reporters::json` | [`RunReport`] | [`RUN_FORMAT`] |
//! | `fuzz --report json:` | `fuzz::render::json` | [`FuzzReport`] | [`FUZZ_FORMAT`] |
//! | `check --json` | `check::render::json` | [`CheckReport`] | [`CHECK_FORMAT`] |
//! | `race --report json:` | `race::report` | `race::RaceReport` (its own serde types: the report is its record) | `race::report::FORMAT_VERSION` |
//! | `race-background --report json:` | `background::race` | `background::race::BgRaceReport` | `background::race::FORMAT_VERSION` |
//!
//! The race reports keep their types beside their producer (the record the race builds is
//! the report), derived Serialize and Deserialize like these; this module names them so the
//! list of reports is in one place. Every type here is plain data (strings, numbers, JSON
//! values), so the reporters and readers need no producer to use it.
//!
//! Versions: a report that has always carried `format_version` must carry it; a reader that
//! finds another number refuses the file, naming it. A report written before it carried one
//! (the background race's) reads as version 0, the same shape without the field.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use taskproof_core::rule::Class;

/// The run report's format version; bumped on any incompatible change. Version 2 added the
/// outcome `not_judged` (a scenario that needs an optional part the target does not
/// declare), `summary.not_judged` and a scenario's `needs`; a version 1 report reads as
/// version 2 with none of them. Version 3 added partial passes: `summary.partial` and a
/// pass's `judged_steps`; a version 1 or 2 report reads as version 3 without them (its
/// passes with `skipped_steps` are partial all the same).
pub const RUN_FORMAT: u64 = 3;
/// The run report formats this taskproof reads: every one written since run reports carried
/// a version (each earlier one is the next without what it added).
pub const RUN_FORMATS_READ: [u64; 3] = [1, 2, RUN_FORMAT];
/// The fuzz report's format version.
pub const FUZZ_FORMAT: u64 = 2;
/// The check report's format version.
pub const CHECK_FORMAT: u64 = 1;

/// How a scenario ended, as every report and count names it: the one outcome of the
/// reports (the terminal, JSON, JUnit and Markdown views, the summary, the matrix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeKind {
    Pass,
    Fail,
    Skip,
    Error,
    /// The scenario needs an optional part of the contract the target does not declare
    /// (docs/spec.md, "Optional parts"): no verdict, and never a failure.
    #[serde(rename = "not_judged")]
    NotJudged,
}

impl OutcomeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Pass => "pass",
            OutcomeKind::Fail => "fail",
            OutcomeKind::Skip => "skip",
            OutcomeKind::Error => "error",
            OutcomeKind::NotJudged => "not_judged",
        }
    }
}

impl fmt::Display for OutcomeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `taskproof run --report json:FILE` report (format [`RUN_FORMAT`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub format_version: u64,
    pub target: RunTarget,
    pub profile: String,
    #[serde(default)]
    pub summary: Summary,
    /// The failed scenarios by consequence class (docs/spec.md, "Consequence classes"), most
    /// severe first, only the classes with one; absent when nothing failed and in reports
    /// written before classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_class: Vec<ClassFailures>,
    pub scenarios: Vec<ScenarioReport>,
    /// Not in the file: the scenarios a trimmed copy of the report left out (arrays ending
    /// in `"... [N more items cut]"`), counted by the reader that removed the markers.
    #[serde(skip)]
    pub cut_scenarios: u64,
}

/// The failed scenarios of one consequence class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassFailures {
    pub class: Class,
    /// The class in words (`loses or corrupts acknowledged data`).
    pub title: String,
    /// How many scenarios failed with this class as their most severe.
    pub failed: usize,
    /// Their ids, sorted.
    pub scenarios: Vec<String>,
    /// The rules that gave their failures this class (each failure's first rule).
    pub rules: Vec<String>,
}

/// Counts over a suite, per outcome; `failed` and `errors` are kept apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub errors: usize,
    /// Scenarios not judged: they need a part the target does not declare.
    pub not_judged: usize,
    /// Of the `passed`, those with steps not judged (partial passes; format 3).
    pub partial: usize,
}

impl Summary {
    pub fn add(&mut self, outcome: OutcomeKind) {
        match outcome {
            OutcomeKind::Pass => self.passed += 1,
            OutcomeKind::Fail => self.failed += 1,
            OutcomeKind::Skip => self.skipped += 1,
            OutcomeKind::Error => self.errors += 1,
            OutcomeKind::NotJudged => self.not_judged += 1,
        }
    }

    /// Whether the run is a success: nothing failed or errored.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.errors == 0
    }

    /// The last line of a run: `N passed, N failed, N errors, N skipped`, and `, N not
    /// judged` when some scenario needed a part the target does not declare, so that a
    /// run that conforms names its scope. Errors (the target broke, so no verdict) are
    /// counted apart from failures (a verdict); the line starts `N passed, N failed` as
    /// before, for CI scripts that read it.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} passed, {} failed, {} errors, {} skipped",
            self.passed, self.failed, self.errors, self.skipped
        );
        if self.not_judged > 0 {
            line.push_str(&format!(", {} not judged", self.not_judged));
        }
        if self.partial > 0 {
            line.push_str(&format!(
                ", {} of the passes partial (part of their steps not judged)",
                self.partial
            ));
        }
        line
    }
}

/// The run's target: the spec it was named by, then its hello without `ok`, or why the
/// hello failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTarget {
    pub spec: String,
    /// The named configuration the target ran in (Claude Code: `teams-off`, the default, or
    /// agent teams on: `teams-env`, `teams-settings`, `teams-flag`); absent for kinds without
    /// configurations and in reports written before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<String>>,
    /// How the adapter maps requests onto its store, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<BTreeMap<String, String>>,
    /// Why the hello failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the target wrote to stderr as its hello failed (its tail; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// How long the target's processes took to start during the run, for kinds whose
    /// sessions start processes (`mcp:`, `cmd:`); absent for the others and in reports
    /// written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts: Option<StartTimes>,
}

/// How long a target's processes took to start during a run: each from its spawn until it
/// answered its greeting (`initialize`, `hello`), under the start's own limit
/// (`--start-timeout`), apart from every request's (issue 55). `advice` is the run's one line
/// about them when they were slow: which flag would have helped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartTimes {
    /// What answering ends a start: `initialize` (an MCP server) or `hello` (an adapter).
    pub greeting: String,
    /// The starts made, the ones that timed out included.
    pub count: usize,
    /// Of them, those that got no answer within the limit.
    #[serde(default)]
    pub timed_out: usize,
    pub slowest_ms: u64,
    pub median_ms: u64,
    pub total_ms: u64,
    /// `--start-timeout`.
    pub limit_ms: u64,
    /// `--start-ahead` and `--jobs` as the run used them.
    pub start_ahead: usize,
    pub jobs: usize,
    /// For slow starts, which flag would have helped and why; absent when none would have
    /// (the starts were made ahead while earlier scenarios ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}

/// One scenario of a run report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioReport {
    pub id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub rules: Vec<String>,
    pub outcome: OutcomeKind,
    /// For `fail`: the most severe consequence class of its failures, each its first rule's
    /// (docs/spec.md, "Consequence classes"); absent otherwise, and in reports written before classes
    /// ([`ScenarioReport::consequence`] derives it for those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<Class>,
    /// `None` for a pass; the skip reason; the first failure or the error, with its step.
    #[serde(default)]
    pub reason: Option<String>,
    /// For `not_judged`: the optional parts the scenario needs and the target does not
    /// declare, each with the first step that needs it (`steps[3]`, or `needs` when the
    /// file names it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<NeededPart>,
    #[serde(default)]
    pub failures: Vec<StepFailure>,
    #[serde(default)]
    pub error: Option<StepError>,
    #[serde(default)]
    pub stderr: String,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Steps the recorded profile held to records as time-dependent (absent in reports
    /// written before recorded profiles had a time probe).
    #[serde(default)]
    pub time_dependent_steps: Vec<usize>,
    #[serde(default)]
    pub skipped_steps: Vec<SkippedStep>,
    /// For a pass with steps not judged (a partial pass): how many were judged, of how many
    /// (format 3; [`ScenarioReport::partial`] derives it for earlier reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_steps: Option<JudgedSteps>,
    #[serde(default)]
    pub duration_ms: u64,
}

/// How many steps of a partial pass were judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgedSteps {
    pub judged: usize,
    pub steps: usize,
}

impl ScenarioReport {
    /// Whether it passed with steps not judged: the report's `judged_steps`, else (a report
    /// written before format 3) a pass with `skipped_steps`, whose step count is unknown.
    pub fn partial(&self) -> bool {
        self.outcome == OutcomeKind::Pass
            && (self.judged_steps.is_some() || !self.skipped_steps.is_empty())
    }

    /// The consequence class of a failed scenario: the one the report gives, else (a report
    /// written before classes) as `run` gives it: the most severe class of its failures,
    /// each of which has its first rule's, or its own first rule's when no failure names a
    /// rule. `None` unless it failed.
    pub fn consequence(&self) -> Option<Class> {
        if self.outcome != OutcomeKind::Fail {
            return None;
        }
        if self.class.is_some() {
            return self.class;
        }
        let first = |ids: &[String]| -> Option<Class> {
            ids.first()
                .and_then(|r| r.parse::<taskproof_core::rule::Rule>().ok())
                .map(|r| r.class())
        };
        self.failures
            .iter()
            .filter_map(|f| f.class.or_else(|| first(&f.rules)))
            .min()
            .or_else(|| first(&self.rules))
    }
}

/// The failed scenarios of `scenarios` by consequence class, most severe first, each
/// class that has one: what [`RunReport::by_class`] holds.
pub fn by_class<'a>(scenarios: impl IntoIterator<Item = &'a ScenarioReport>) -> Vec<ClassFailures> {
    let scenarios: Vec<&ScenarioReport> = scenarios.into_iter().collect();
    Class::ALL
        .into_iter()
        .filter_map(|c| {
            let of: Vec<&&ScenarioReport> = scenarios
                .iter()
                .filter(|s| s.consequence() == Some(c))
                .collect();
            if of.is_empty() {
                return None;
            }
            let mut ids: Vec<String> = of.iter().map(|s| s.id.clone()).collect();
            ids.sort();
            let mut rules: Vec<taskproof_core::rule::Rule> = of
                .iter()
                // The rules that gave the class: the first of each failure of that class.
                .flat_map(|s| s.failures.iter())
                .filter(|f| f.consequence() == Some(c))
                .filter_map(|f| f.rules.first())
                .filter_map(|r| r.parse::<taskproof_core::rule::Rule>().ok())
                .collect();
            rules.sort();
            rules.dedup();
            Some(ClassFailures {
                class: c,
                title: c.title().to_string(),
                failed: ids.len(),
                scenarios: ids,
                rules: rules.iter().map(|r| r.as_str().to_string()).collect(),
            })
        })
        .collect()
}

/// An optional part a scenario needs that the target does not declare.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeededPart {
    /// The part's word (`metadata`, `edge_removal`, …).
    pub part: String,
    /// The first step that needs it; `None` when the scenario's `needs` names it.
    #[serde(default)]
    pub step: Option<usize>,
}

/// A broken expectation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepFailure {
    /// Index in `steps`; `None` for the sandbox check after the last step.
    pub step: Option<usize>,
    pub session: Option<String>,
    /// What was sent, placeholders filled; `None` for file and session steps.
    pub request: Option<Value>,
    pub expected: Value,
    pub actual: Value,
    pub reason: String,
    pub rules: Vec<String>,
    /// The consequence class of the first of `rules` (absent in reports written before
    /// classes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<Class>,
    pub note: Option<String>,
    /// What happened between requests, for a failure after a session step (absent in
    /// reports written before session steps).
    pub witness: Option<Witness>,
}

impl StepFailure {
    /// The failure's consequence class: the one the report gives, else (a report written
    /// before classes) its first rule's.
    pub fn consequence(&self) -> Option<Class> {
        self.class.or_else(|| {
            self.rules
                .first()
                .and_then(|r| r.parse::<taskproof_core::rule::Rule>().ok())
                .map(|r| r.class())
        })
    }
}

/// The witness of a failure after a session step (`wait`, `clear`, `exit`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Witness {
    /// The session step before the failure (`steps[3] wait 7 s`).
    pub event: String,
    /// Seconds from just before it to the failing step's judgement, to the millisecond.
    pub seconds: f64,
    pub files_before: Option<Vec<String>>,
    pub files_after: Option<Vec<String>>,
    /// Files present before and gone after.
    pub gone: Vec<String>,
    /// Task files seen earlier and gone now, each with the steps between which it went.
    pub vanished: Vec<String>,
    /// What became of the tasks the failing request is about (absent when nothing explains
    /// the failure, and in reports written before findings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<WitnessFinding>,
}

/// A witness's finding: the failing request's tasks deleted, or kept on disk and no longer
/// shown (`result::Finding`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WitnessFinding {
    /// `deleted` or `kept_unseen`.
    pub kind: String,
    /// The finding in words, as the terminal report gives it.
    pub words: String,
    pub files: Vec<String>,
    pub changed: Vec<String>,
    pub list_before: String,
    pub list_now: Option<String>,
}

/// Where and how the target broke.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepError {
    pub step: Option<usize>,
    pub request: Option<Value>,
    pub message: String,
}

/// A step that did not run while the rest of the scenario did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SkippedStep {
    pub step: usize,
    pub reason: String,
}

/// A `taskproof fuzz --report json:FILE` report (format [`FUZZ_FORMAT`], docs/fuzzing.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzReport {
    pub format_version: u64,
    /// Always `fuzz`.
    pub command: String,
    pub target: String,
    pub profile: String,
    pub seed: u64,
    pub cases: u32,
    pub planned_cases: u32,
    pub max_steps: usize,
    pub wait_max_seconds: f64,
    pub session_steps: bool,
    pub settle_seconds: f64,
    pub stopped_early: bool,
    /// `--time-limit` in seconds, when given.
    pub time_limit_seconds: Option<f64>,
    /// True when the time limit ended the run before its last case.
    pub out_of_time: bool,
    pub duration_ms: u64,
    /// The optional parts the target's hello offered the generator (format 2).
    pub offered: Vec<String>,
    /// Whether steps wrote task files as another program would (format 2).
    pub files: bool,
    /// What the cases sent and left out (format 2).
    pub coverage: FuzzCoverage,
    /// The parallel part of concurrent cases: most sessions (0: every case a sequence) and
    /// most requests per session; the cases that had one; those whose history the search
    /// could not decide within its budget (neither agreed nor diverged); and whether the
    /// cases shared one root, each on lists of its own. (Reports written before issue 53
    /// read them as 0 and false.)
    #[serde(default)]
    pub parallel_lanes: u8,
    #[serde(default)]
    pub parallel_steps: u8,
    #[serde(default)]
    pub concurrent_cases: u32,
    #[serde(default)]
    pub unknown_cases: u32,
    #[serde(default)]
    pub reused_root: bool,
    pub found: Vec<FuzzFound>,
    pub unconfirmed: Vec<FuzzUnconfirmed>,
    pub known: Vec<FuzzKnown>,
}

/// A distinct divergence, shrunk, replayed and written as a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzFound {
    pub fingerprint: String,
    pub op: String,
    pub rules: Vec<String>,
    pub summary: String,
    pub case: u32,
    pub file: String,
    /// Whether this run wrote the file (else it was there already).
    pub new: bool,
    pub replay: String,
    pub repeated_cases: u32,
    /// Milliseconds from the start of the run to the end of the case that met it, before
    /// shrinking (format 2).
    pub after_ms: u64,
    pub shrink: FuzzShrink,
    /// A concurrent finding's scenario replayed `replays` times, failing in `failed_replays`
    /// of them (absent for a sequence's finding, replayed until it fails).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replays: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_replays: Option<u32>,
}

/// What a fuzz run's cases sent and left out (docs/fuzzing.md, "What a run sent").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FuzzCoverage {
    /// Steps generated.
    pub generated: u64,
    /// Requests sent for them.
    pub sent: u64,
    /// Op → requests sent.
    pub ops: BTreeMap<String, u64>,
    /// Status word given in a sent create or update → how many (`other` for any word
    /// outside the three).
    pub statuses: BTreeMap<String, u64>,
    /// Op → kind of answer (`ok`, an error kind, `broken`) → how many.
    pub answers: BTreeMap<String, BTreeMap<String, u64>>,
    /// Why a generated step was not taken (`part NAME` for an undeclared part) → how many.
    pub left_out: BTreeMap<String, u64>,
    /// Part → fields taken out of requests that were still sent.
    pub dropped: BTreeMap<String, u64>,
    /// Restarts, waits, session events, foreign files done → how many.
    pub other: BTreeMap<String, u64>,
    /// Listings after each case's last step.
    pub final_listings: u64,
    /// Milliseconds spent making fresh roots and starting the target (on another thread while
    /// the case before ran, unless `--no-prestart`), waiting for answers, and running cases
    /// from their start to their end (answers included, starts not).
    /// (Reports written before these fields read them as 0.)
    #[serde(default)]
    pub start_ms: u64,
    #[serde(default)]
    pub requests_ms: u64,
    #[serde(default)]
    pub cases_ms: u64,
    /// Requests sent in parallel parts; pairs of them from different sessions in flight at
    /// once; distinct interleavings of sends and answers met (issue 53; 0 before it).
    #[serde(default)]
    pub concurrent: u64,
    #[serde(default)]
    pub overlapping: u64,
    #[serde(default)]
    pub interleavings: u64,
}

/// How a finding was shrunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzShrink {
    pub runs: u32,
    pub from_steps: usize,
    pub to_steps: usize,
    /// `shrink-runs` or `shrink-time` when a limit stopped it.
    pub stopped_by: Option<String>,
}

/// A divergence that did not come back when replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzUnconfirmed {
    pub fingerprint: String,
    pub summary: String,
    pub case: u32,
    pub why: String,
}

/// A known finding left out, with the cases that hit it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzKnown {
    pub fingerprint: String,
    pub cases: u32,
    pub reason: Option<String>,
    /// `FILE:LINE` of its entry.
    pub listed_in: Option<String>,
}

/// A `taskproof check --json` report (format [`CHECK_FORMAT`], docs/check.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub format_version: u64,
    /// `check`, `dry-run` or `fix`.
    pub mode: String,
    pub root: String,
    pub lists: Vec<CheckList>,
    pub tasks: usize,
    pub findings: Vec<CheckFinding>,
    pub changes: Vec<CheckChange>,
}

/// A task list that was audited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckList {
    pub name: String,
    pub path: String,
    pub layout: String,
    pub tasks: usize,
    pub busy: bool,
}

/// Something wrong in a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckFinding {
    pub list: String,
    pub file: String,
    /// The rule it breaks (`S7`), or what it cites instead.
    pub rule: String,
    pub kind: String,
    pub message: String,
    pub repairable: bool,
}

/// A repair, done or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckChange {
    pub list: String,
    pub change: String,
    pub done: bool,
    /// Why it was not done.
    pub skipped: Option<String>,
}

/// A report that could not be read: the file, and where in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ReadError {
    pub path: String,
    pub message: String,
}

impl ReadError {
    pub fn new(path: &Path, message: impl fmt::Display) -> ReadError {
        ReadError {
            path: path.display().to_string(),
            message: message.to_string(),
        }
    }
}

/// The report as JSON, fields in the schema's order.
pub fn to_value<T: Serialize>(report: &T) -> Value {
    serde_json::to_value(report).expect("reports serialize")
}

/// Reads a report of type `T` from `path`.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<T, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::new(path, e))?;
    parse(path, &text)
}

/// Parses a report of type `T` read from `path`. The error names the file, the line and
/// column, and the field the reader was in (`field "outcome"`), as serde's own message
/// names the field only when it is missing.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, ReadError> {
    serde_json::from_str(text).map_err(|e| ReadError::new(path, located(&e, text)))
}

/// The report's `format_version`, 0 when it has none (a report written before it carried
/// one).
pub fn format_version(path: &Path, text: &str) -> Result<u64, ReadError> {
    #[derive(Deserialize)]
    struct Versioned {
        #[serde(default)]
        format_version: u64,
    }
    parse::<Versioned>(path, text).map(|v| v.format_version)
}

/// serde_json's message, with the field whose value it stopped in when the text names one.
fn located(e: &serde_json::Error, text: &str) -> String {
    let message = e.to_string();
    if message.starts_with("missing field") {
        // serde names the field; the text before the error is the object's last one.
        return message;
    }
    match field_before(text, e.line(), e.column()) {
        Some(field) if !message.contains(&format!("`{field}`")) => {
            format!("field {field:?}: {message}")
        }
        _ => message,
    }
}

/// The last object key written before line `line`, column `column` (both from 1): the
/// field whose value a parse error stopped in.
fn field_before(text: &str, line: usize, column: usize) -> Option<String> {
    if line == 0 {
        return None;
    }
    let start: usize = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum();
    let end = (start + column).min(text.len());
    let before = text.get(..end)?;
    let colon = before.rfind("\":")?;
    let open = before[..colon].rfind('"')?;
    let key = &before[open + 1..colon];
    (!key.is_empty() && !key.contains(['\n', '{', '}'])).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_is_written_in_lowercase_and_read_back() {
        for o in [
            OutcomeKind::Pass,
            OutcomeKind::Fail,
            OutcomeKind::Skip,
            OutcomeKind::Error,
        ] {
            let v = serde_json::to_value(o).unwrap();
            assert_eq!(v, Value::String(o.as_str().into()));
            assert_eq!(serde_json::from_value::<OutcomeKind>(v).unwrap(), o);
        }
    }

    #[test]
    fn a_bad_field_names_the_file_and_the_field() {
        let text = "{\n  \"format_version\": 1,\n  \"target\": {\"spec\": \"x\"},\n  \"profile\": \"strict\",\n  \"scenarios\": [\n    {\"id\": \"a\", \"outcome\": \"passed\"}\n  ]\n}\n";
        let e = parse::<RunReport>(Path::new("r/run.json"), text).unwrap_err();
        let s = e.to_string();
        assert!(
            s.starts_with("r/run.json: field \"outcome\": unknown variant `passed`"),
            "{s}"
        );
        assert!(s.contains("line 6"), "{s}");
        // A missing field: serde names it itself.
        let e = parse::<RunReport>(Path::new("r/run.json"), "{\"format_version\": 1}").unwrap_err();
        assert!(e.to_string().contains("missing field `target`"), "{e}");
    }

    #[test]
    fn a_report_without_format_version_is_version_0() {
        let p = Path::new("x.json");
        assert_eq!(format_version(p, "{\"tasks\": 3}").unwrap(), 0);
        assert_eq!(format_version(p, "{\"format_version\": 2}").unwrap(), 2);
        assert!(format_version(p, "{\"format_version\": \"2\"}").is_err());
    }
}
