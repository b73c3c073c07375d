//! The JSON report, format version 1 (docs/reports.md): the target's hello, the profile,
//! the counts, and every scenario with its outcome and failures.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::events::{Event, ReportError, Reporter, write_final};
use super::result::{ScenarioResult, StepFailure, SuiteResult, TargetInfo};

/// The version of the report's shape; bumped on any incompatible change.
pub const FORMAT_VERSION: u64 = 1;

/// Writes the JSON report when the run finishes (`run`'s, format version 1 below, the race
/// report of `race --report json:PATH`, docs/race.md, the fuzz report of `fuzz --report
/// json:PATH`, `fuzz::render::json`, or the check report, `check::render::json`; each
/// producer's through its [`super::Document`]).
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
    let s = suite.summary();
    json!({
        "format_version": FORMAT_VERSION,
        "target": target_json(&suite.target),
        "profile": suite.profile.as_str(),
        "summary": {
            "passed": s.passed,
            "failed": s.failed,
            "skipped": s.skipped,
            "errors": s.errors,
        },
        "scenarios": suite.scenarios.iter().map(scenario_json).collect::<Vec<_>>(),
    })
}

/// The target's hello with the spec it was named by, or the reason the hello failed.
pub fn target_json(t: &TargetInfo) -> Value {
    let mut m = Map::new();
    m.insert("spec".into(), json!(t.spec));
    match &t.hello {
        Ok(h) => {
            if let Value::Object(hello) = h.to_json() {
                m.extend(hello.into_iter().filter(|(k, _)| k != "ok"));
            }
        }
        Err(e) => {
            m.insert("error".into(), json!(e));
        }
    }
    Value::Object(m)
}

fn scenario_json(r: &ScenarioResult) -> Value {
    json!({
        "id": r.id,
        "title": r.title,
        "file": r.file.display().to_string(),
        "source": r.source,
        "rules": r.rules,
        "outcome": r.kind().as_str(),
        "reason": r.reason(),
        "failures": r.failures().iter().map(failure_json).collect::<Vec<_>>(),
        "error": r.result.as_ref().err().map(|e| json!({
            "step": e.step,
            "request": e.request,
            "message": e.message,
        })),
        "stderr": r.stderr,
        "notes": r.notes,
        "time_dependent_steps": r.time_dependent,
        "skipped_steps": r.skipped_steps.iter().map(|k| json!({
            "step": k.step,
            "reason": k.reason,
        })).collect::<Vec<_>>(),
        "duration_ms": r.elapsed.as_millis() as u64,
    })
}

fn failure_json(f: &StepFailure) -> Value {
    json!({
        "step": f.step,
        "session": f.session,
        "request": f.request,
        "expected": f.expected,
        "actual": f.actual,
        "reason": f.reason,
        "rules": f.rules,
        "note": f.note,
        "witness": f.witness.as_ref().map(|w| json!({
            "event": w.event,
            "seconds": (w.seconds * 1000.0).round() / 1000.0,
            "files_before": w.before,
            "files_after": w.after,
            "gone": w.gone(),
            "vanished": w.vanished,
        })),
    })
}
