//! The Markdown summary: the counts, the failures by consequence class (most severe first),
//! then a table of every scenario that did not pass (failures first, by class), the
//! notes (what a profile does not promise, which the terminal and JSON reports carry too),
//! the steps that were skipped, and the list of scenarios that passed, for a pull-request
//! comment or a CI job summary.

use std::fmt::Write as _;
use std::path::PathBuf;

use taskproof_report::events::{Event, ReportError, Reporter, write_final};
use taskproof_report::output::{bullets, cell};
use taskproof_report::result::{OutcomeKind, ScenarioResult, SuiteResult};

/// Writes the Markdown summary when the run (or a fuzz run, `fuzz::render::markdown`,
/// through its [`taskproof_report::Document`]) finishes.
pub struct MarkdownReporter {
    pub path: PathBuf,
}

impl Reporter for MarkdownReporter {
    fn report(&mut self, event: &Event<'_>) -> Result<(), ReportError> {
        let text = match event {
            Event::RunFinished { suite } => Some(to_markdown(suite)),
            Event::FuzzFinished { report } | Event::RaceFinished { report } => report.markdown(),
            _ => None,
        };
        write_final(&self.path, text)
    }
}

/// The summary as Markdown.
pub fn to_markdown(suite: &SuiteResult) -> String {
    let s = suite.summary();
    let mut out = String::new();
    let target = match &suite.target.hello {
        Ok(h) => format!(
            "`{}` ({} {}{})",
            suite.target.spec,
            h.name,
            h.version,
            configuration_words(&suite.target.configuration)
        ),
        Err(e) => format!("`{}` (hello failed: {})", suite.target.spec, cell(e)),
    };
    let _ = writeln!(out, "# taskproof run\n");
    let _ = writeln!(out, "Target {target}, profile `{}`.\n", suite.profile);
    let _ = writeln!(out, "**{}**\n", s.line());
    let classes: Vec<String> = taskproof_report::result::by_class_lines(suite)
        .into_iter()
        .map(|(c, line)| match c {
            // Lost data first, and in bold.
            taskproof_core::rule::Class::DataLoss => format!("- **{}**", cell(&line)),
            _ => format!("- {}", cell(&line)),
        })
        .collect();
    bullets(
        &mut out,
        "Failed, by consequence (most severe first, docs/spec.md):",
        &classes,
    );
    // Failures first, the most severe class first; then skips, errors and the scenarios
    // not judged (`OutcomeKind`'s order); by id within each.
    let mut not_passed: Vec<_> = suite
        .scenarios
        .iter()
        .filter(|r| r.kind() != OutcomeKind::Pass)
        .collect();
    not_passed.sort_by_key(|r| (r.kind(), r.class(), r.id.clone()));
    if !not_passed.is_empty() {
        let _ = writeln!(out, "| scenario | outcome | class | rules | reason |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for r in not_passed {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                r.id,
                r.kind().as_str(),
                r.class().map(|c| c.as_str()).unwrap_or(""),
                // A failure counts against its failing steps' rules, an error against none.
                match r.kind() {
                    OutcomeKind::Fail => taskproof_core::rule::join(
                        &r.failed_rules().into_iter().collect::<Vec<_>>(),
                        ", "
                    ),
                    OutcomeKind::Error => String::new(),
                    _ => taskproof_core::rule::join(&r.rules, ", "),
                },
                cell(&r.reason().unwrap_or_default())
            );
        }
        out.push('\n');
    }
    let each = |lines: &dyn Fn(&ScenarioResult) -> Vec<String>| -> Vec<String> {
        suite.scenarios.iter().flat_map(lines).collect()
    };
    let notes = each(&|r| {
        let id = &r.id;
        r.notes
            .iter()
            .map(|n| format!("- `{id}`: {}", cell(n)))
            .collect()
    });
    let mut notes = notes;
    notes.extend(
        taskproof_report::result::target_notes_once(suite)
            .iter()
            .map(|n| format!("- {}", cell(n))),
    );
    if let Some(line) = suite
        .starts
        .as_ref()
        .and_then(|s| s.line(&suite.target.spec))
    {
        notes.push(format!("- {}", cell(&line)));
    }
    bullets(&mut out, "Notes (not failures):", &notes);
    let steps = each(&|r| {
        let id = &r.id;
        r.skipped_steps
            .iter()
            .map(|k| format!("- `{id}` steps[{}]: {}", k.step, cell(&k.reason)))
            .collect()
    });
    bullets(&mut out, "Steps skipped:", &steps);
    // Partial passes apart from full ones, each with how much was judged.
    let partial: Vec<String> = suite
        .scenarios
        .iter()
        .filter_map(|r| {
            let (judged, of) = r.partial()?;
            Some(format!("- `{}`: {judged} of {of} steps judged", r.id))
        })
        .collect();
    bullets(
        &mut out,
        "Partial passes (passed, part of their steps not judged):",
        &partial,
    );
    let passed: Vec<String> = suite
        .scenarios
        .iter()
        .filter(|r| r.kind() == OutcomeKind::Pass && r.partial().is_none())
        .map(|r| format!("`{}`", r.id))
        .collect();
    if !passed.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>{} passed, every step judged</summary>\n",
            passed.len()
        );
        let _ = writeln!(out, "{}\n", passed.join(", "));
        let _ = writeln!(out, "</details>");
    }
    out
}

/// `, configuration NAME` for a target that runs in a named configuration, else nothing.
pub fn configuration_words(configuration: &Option<String>) -> String {
    configuration
        .as_ref()
        .map(|c| format!(", configuration {c}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskproof_profile::Profile;
    use taskproof_report::result::{Outcome, ScenarioResult, StepSkip, TargetInfo};

    #[test]
    fn notes_and_skipped_steps_are_in_the_summary() {
        let result = ScenarioResult {
            id: "concurrent-claims".into(),
            title: "t".into(),
            file: "scenarios/concurrent-claims.json".into(),
            source: None,
            rules: vec![taskproof_core::rule::Rule::S20],
            result: Ok(Outcome::Pass),
            stderr: String::new(),
            notes: vec!["steps[3] (not promised under cc-2.1.17): one_claim: 2 of 2 | won".into()],
            target_notes: Vec::new(),
            step_count: 6,
            skipped_steps: vec![StepSkip {
                step: 5,
                reason: "touches files, but the target's layout is opaque".into(),
            }],
            time_dependent: Vec::new(),
            steps: Vec::new(),
            elapsed: std::time::Duration::ZERO,
        };
        let suite = SuiteResult {
            target: TargetInfo {
                spec: "naive".into(),
                configuration: None,
                hello: Err("x".into()),
                stderr: String::new(),
            },
            profile: Profile::Cc2117.into(),
            scenarios: vec![result],
            elapsed: std::time::Duration::ZERO,
            starts: None,
        };
        let md = to_markdown(&suite);
        assert!(
            md.contains(
                "- `concurrent-claims`: steps[3] (not promised under cc-2.1.17): one_claim: 2 of 2 \\| won"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "- `concurrent-claims` steps[5]: touches files, but the target's layout is opaque"
            ),
            "{md}"
        );
        // A pass with a step not judged is a partial pass, counted and listed apart.
        assert!(
            md.contains("**1 passed, 0 failed, 0 errors, 0 skipped, 1 of the passes partial (part of their steps not judged)**"),
            "{md}"
        );
        assert!(
            md.contains("- `concurrent-claims`: 5 of 6 steps judged"),
            "{md}"
        );
        assert!(!md.contains("passed, every step judged"), "{md}");
    }
}
