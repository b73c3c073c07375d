//! The Markdown summary: the counts, then a table of every scenario that did not pass and
//! the list of those that did, for a pull-request comment or a CI job summary.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::events::{Event, ReportError, Reporter, write_report};
use crate::scenario::{OutcomeKind, SuiteResult};

/// Writes the Markdown summary when the run finishes.
pub struct MarkdownReporter {
    pub path: PathBuf,
}

impl Reporter for MarkdownReporter {
    fn report(&mut self, event: &Event<'_>) -> Result<(), ReportError> {
        if let Event::RunFinished { suite } = event {
            write_report(&self.path, to_markdown(suite).as_bytes())?;
        }
        Ok(())
    }
}

/// Escapes text for a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The summary as Markdown.
pub fn to_markdown(suite: &SuiteResult) -> String {
    let s = suite.summary();
    let mut out = String::new();
    let target = match &suite.target.hello {
        Ok(h) => format!("`{}` ({} {})", suite.target.spec, h.name, h.version),
        Err(e) => format!("`{}` (hello failed: {})", suite.target.spec, cell(e)),
    };
    let _ = writeln!(out, "# taskproof run\n");
    let _ = writeln!(out, "Target {target}, profile `{}`.\n", suite.profile);
    let _ = writeln!(
        out,
        "**{}** ({} errors among the failed)\n",
        s.line(),
        s.errors
    );
    let not_passed: Vec<_> = suite
        .scenarios
        .iter()
        .filter(|r| r.kind() != OutcomeKind::Pass)
        .collect();
    if !not_passed.is_empty() {
        let _ = writeln!(out, "| scenario | outcome | rules | reason |");
        let _ = writeln!(out, "|---|---|---|---|");
        for r in not_passed {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                r.id,
                r.kind().as_str(),
                r.rules.join(", "),
                cell(&r.reason().unwrap_or_default())
            );
        }
        out.push('\n');
    }
    let passed: Vec<String> = suite
        .scenarios
        .iter()
        .filter(|r| r.kind() == OutcomeKind::Pass)
        .map(|r| format!("`{}`", r.id))
        .collect();
    if !passed.is_empty() {
        let _ = writeln!(out, "<details><summary>{} passed</summary>\n", passed.len());
        let _ = writeln!(out, "{}\n", passed.join(", "));
        let _ = writeln!(out, "</details>");
    }
    out
}
