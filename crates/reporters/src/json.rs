//! The JSON report, format version 2 (`schema::RUN_FORMAT`, docs/reports.md): the target's hello, the profile,
//! the counts, and every scenario with its outcome and failures, written through the
//! schema's [`RunReport`](taskproof_report::schema::RunReport).

use std::io::Write;
use std::path::PathBuf;

use serde_json::Value;

use taskproof_core::rule::Rule;
use taskproof_report::events::{Event, ReportError, Reporter, write_final};
use taskproof_report::result::{self, ScenarioResult, SuiteResult, TargetInfo};
use taskproof_report::schema::{
    self, NeededPart, RunReport, RunTarget, ScenarioReport, SkippedStep, StepError, StepFailure,
    Witness, WitnessFinding,
};

/// The version of the report's shape; bumped on any incompatible change.
pub const FORMAT_VERSION: u64 = schema::RUN_FORMAT;

/// Writes the JSON report when the run finishes (`run`'s, format version 1 below, the race
/// report of `race --report json:PATH`, docs/race.md, the fuzz report of `fuzz --report
/// json:PATH`, `fuzz::render::json`, or the check report, `check::render::json`; each
/// producer's through its [`taskproof_report::Document`]).
pub struct JsonReporter {
    pub path: PathBuf,
}

impl Reporter for JsonReporter {
    fn report(&mut self, event: &Event<'_>) -> Result<(), ReportError> {
        write_final(&self.path, of_event(event).map(pretty))
    }
}

/// Prints the JSON report of the command's last event to a stream, as `check --json` does on
/// stdout: the same document, the same bytes, as [`JsonReporter`] writes to a file.
pub struct JsonPrinter<W: Write> {
    pub out: W,
}

impl<W: Write> Reporter for JsonPrinter<W> {
    fn report(&mut self, event: &Event<'_>) -> Result<(), ReportError> {
        let Some(text) = of_event(event).map(pretty) else {
            return Ok(());
        };
        self.out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(ReportError::Terminal)
    }
}

/// The JSON report of a command's last event, if it has one.
fn of_event(event: &Event<'_>) -> Option<Value> {
    match event {
        Event::RunFinished { suite } => Some(to_json(suite)),
        Event::RaceFinished { report }
        | Event::FuzzFinished { report }
        | Event::CheckFinished { report } => report.json(),
        _ => None,
    }
}

fn pretty(value: Value) -> String {
    let mut text = serde_json::to_string_pretty(&value).expect("JSON serializes");
    text.push('\n');
    text
}

/// The report as a JSON value.
pub fn to_json(suite: &SuiteResult) -> Value {
    schema::to_value(&run_report(suite))
}

/// The run report of a finished suite, in the schema's types.
pub fn run_report(suite: &SuiteResult) -> RunReport {
    let scenarios: Vec<ScenarioReport> = suite.scenarios.iter().map(scenario_report).collect();
    RunReport {
        format_version: FORMAT_VERSION,
        target: RunTarget {
            starts: suite.starts.clone(),
            ..run_target(&suite.target)
        },
        profile: suite.profile.as_str().to_string(),
        summary: suite.summary(),
        by_class: schema::by_class(&scenarios),
        scenarios,
        cut_scenarios: 0,
    }
}

/// The target's hello with the spec it was named by, or the reason the hello failed.
pub fn run_target(t: &TargetInfo) -> RunTarget {
    match &t.hello {
        Ok(h) => RunTarget {
            spec: t.spec.clone(),
            configuration: t.configuration.clone(),
            protocol: Some(h.protocol),
            name: Some(h.name.clone()),
            version: Some(h.version.clone()),
            layout: Some(h.layout.as_str().to_string()),
            features: Some(h.features.iter().map(|f| f.as_str().to_string()).collect()),
            mapping: (!h.mapping.is_empty()).then(|| h.mapping.clone()),
            error: None,
            stderr: None,
            starts: None,
        },
        Err(e) => RunTarget {
            spec: t.spec.clone(),
            configuration: t.configuration.clone(),
            error: Some(e.clone()),
            stderr: (!t.stderr.trim().is_empty()).then(|| t.stderr.clone()),
            ..RunTarget::default()
        },
    }
}

fn rules(rules: &[Rule]) -> Vec<String> {
    rules.iter().map(|r| r.as_str().to_string()).collect()
}

fn scenario_report(r: &ScenarioResult) -> ScenarioReport {
    ScenarioReport {
        id: r.id.clone(),
        title: r.title.clone(),
        file: r.file.display().to_string(),
        source: r.source.clone(),
        rules: rules(&r.rules),
        outcome: r.kind(),
        class: r.class(),
        reason: r.reason(),
        needs: match &r.result {
            Ok(result::Outcome::NotJudged(parts)) => parts
                .iter()
                .map(|(f, step)| NeededPart {
                    part: f.as_str().to_string(),
                    step: *step,
                })
                .collect(),
            _ => Vec::new(),
        },
        failures: r.failures().iter().map(step_failure).collect(),
        error: r.result.as_ref().err().map(|e| StepError {
            step: e.step,
            request: e.request.clone(),
            message: e.message.clone(),
        }),
        stderr: r.stderr.clone(),
        notes: r.all_notes(),
        time_dependent_steps: r.time_dependent.clone(),
        skipped_steps: r
            .skipped_steps
            .iter()
            .map(|k| SkippedStep {
                step: k.step,
                reason: k.reason.clone(),
            })
            .collect(),
        judged_steps: r
            .partial()
            .map(|(judged, steps)| taskproof_report::schema::JudgedSteps { judged, steps }),
        duration_ms: r.elapsed.as_millis() as u64,
    }
}

fn step_failure(f: &result::StepFailure) -> StepFailure {
    StepFailure {
        step: f.step,
        session: f.session.clone(),
        request: f.request.clone(),
        expected: f.expected.clone(),
        actual: f.actual.clone(),
        reason: f.reason.clone(),
        rules: rules(&f.rules),
        class: f.class(),
        note: f.note.clone(),
        witness: f.witness.as_ref().map(|w| Witness {
            event: w.event.clone(),
            seconds: (w.seconds * 1000.0).round() / 1000.0,
            files_before: w.before.clone(),
            files_after: w.after.clone(),
            gone: w.gone().into_iter().map(str::to_string).collect(),
            vanished: w.vanished.clone(),
            finding: w.finding.as_ref().map(|f| WitnessFinding {
                kind: f.kind.as_str().to_string(),
                words: f.words(),
                files: f.files.clone(),
                changed: f.changed.clone(),
                list_before: f.list_before.clone(),
                list_now: f.list_now.clone(),
            }),
        }),
    }
}
