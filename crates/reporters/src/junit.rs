//! The JUnit XML report: one testsuite for the run, one testcase per scenario (named by its
//! id, classed by its file), so CI systems can show scenarios like tests. A failed
//! scenario's consequence class (docs/spec.md) is its `class` property and leads its message.

use std::path::PathBuf;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::terminal::failure_text;
use taskproof_report::events::{Event, ReportError, Reporter, write_report};
use taskproof_report::result::{OutcomeKind, SuiteResult};

/// Writes the JUnit report when the run finishes.
pub struct JunitReporter {
    pub path: PathBuf,
}

impl Reporter for JunitReporter {
    fn report(&mut self, event: &Event<'_>) -> Result<(), ReportError> {
        if let Event::RunFinished { suite } = event {
            let xml = to_junit(suite)
                .to_string()
                .map_err(|e| ReportError::Junit(e.to_string()))?;
            write_report(&self.path, xml.as_bytes())?;
        }
        Ok(())
    }
}

/// The report as a quick-junit document.
pub fn to_junit(suite: &SuiteResult) -> Report {
    let mut report = Report::new("taskproof");
    let mut ts = TestSuite::new(format!("{} ({})", suite.target.spec, suite.profile));
    for r in &suite.scenarios {
        let status = match r.kind() {
            OutcomeKind::Pass => TestCaseStatus::success(),
            // JUnit knows only skipped: a scenario not judged is one, its message starting
            // "not judged:" and its `outcome` property saying so (below).
            OutcomeKind::Skip | OutcomeKind::NotJudged => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(r.reason().unwrap_or_default());
                s
            }
            kind => {
                let mut s = TestCaseStatus::non_success(if kind == OutcomeKind::Error {
                    NonSuccessKind::Error
                } else {
                    NonSuccessKind::Failure
                });
                // A failure's message starts with its consequence class, so that a CI page
                // listing the failed tests shows which ones lose data.
                let reason = r.reason().unwrap_or_default();
                s.set_message(match r.class() {
                    Some(c) => format!("[{c}] {reason}"),
                    None => reason,
                });
                s.set_type(if kind == OutcomeKind::Error {
                    "target error"
                } else {
                    "conformance failure"
                });
                s.set_description(failure_text(r));
                s
            }
        };
        let mut tc = TestCase::new(r.id.clone(), status);
        tc.set_classname(r.file.display().to_string());
        tc.set_time(r.elapsed);
        tc.add_property(("rules", taskproof_core::rule::join(&r.rules, ",").as_str()));
        if r.kind() == OutcomeKind::NotJudged {
            tc.add_property(("outcome", r.kind().as_str()));
        }
        // A partial pass: a pass, told apart, with how much was judged.
        if let Some((judged, of)) = r.partial() {
            tc.add_property(("outcome", "partial"));
            tc.add_property(("judged_steps", format!("{judged}/{of}").as_str()));
        }
        if let Some(c) = r.class() {
            tc.add_property(("class", c.as_str()));
        }
        if !r.skipped_steps.is_empty() {
            // Steps that did not run while the rest did (file steps against an opaque
            // layout): `steps[N]: reason`, one per line.
            let skipped: Vec<String> = r
                .skipped_steps
                .iter()
                .map(|k| format!("steps[{}]: {}", k.step, k.reason))
                .collect();
            tc.set_system_out(format!("skipped steps:\n{}", skipped.join("\n")));
        }
        if !r.stderr.is_empty() {
            tc.set_system_err(r.stderr.clone());
        }
        ts.add_test_case(tc);
    }
    ts.set_time(suite.elapsed);
    report.add_test_suite(ts);
    report.set_time(suite.elapsed);
    report
}
