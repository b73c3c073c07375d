//! The terminal reporter: a progress bar while scenarios run (only on a terminal, outside
//! CI), a block per failed or errored scenario with everything needed to act on it, a line
//! per skip (of a scenario or of a step), and the summary `N passed, N failed, N errors,
//! N skipped` alone on the last line. A target that cannot start is reported once, at the
//! start. A reader that goes away (`| head`) ends the output quietly: the run finishes, its
//! file reports are written, and nothing more is printed.
//!
//! Whether stdout is a terminal, whether this is CI and what the color setting is are passed
//! in (an [`Output`] and a [`ColorChoice`]), never asked here, so every output choice can be
//! tested; styles and the progress bar are the shared ones of [`taskproof_report::output`].

use std::io::Write;

use anstyle::Style;
use indicatif::ProgressBar;
use serde_json::Value;

use taskproof_report::events::{Event, ReportError, Reporter};
use taskproof_report::output::{ColorChoice, Output, paint, progress_bar, style};
use taskproof_report::result::{OutcomeKind, ScenarioResult};

/// The longest JSON value shown in full; longer ones are cut with a note.
const MAX_SHOWN: usize = 2000;
/// The most stderr lines shown per failure (the tail).
const MAX_STDERR_LINES: usize = 30;

pub struct TerminalReporter<W: Write> {
    out: W,
    color: bool,
    progress: Option<ProgressBar>,
    output: Output,
    /// Set once stdout's reader went away: nothing more is written.
    closed: bool,
}

impl<W: Write> TerminalReporter<W> {
    pub fn new(out: W, output: Output, color: ColorChoice) -> TerminalReporter<W> {
        TerminalReporter {
            out,
            color: output.color(color),
            progress: None,
            output,
            closed: false,
        }
    }

    fn paint(&self, style: Style, text: &str) -> String {
        paint(self.color, style, text)
    }

    /// Writes text, keeping it clear of the progress bar.
    fn emit(&mut self, text: &str) -> Result<(), ReportError> {
        if self.closed {
            return Ok(());
        }
        let out = &mut self.out;
        let write = |out: &mut W| out.write_all(text.as_bytes()).and_then(|()| out.flush());
        let written = match &self.progress {
            Some(pb) => pb.suspend(|| write(out)),
            None => write(out),
        };
        match written {
            Ok(()) => Ok(()),
            // The reader is gone (`run | head`): a normal end of the output, not an error.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(ReportError::Terminal(e)),
        }
    }
}

impl<W: Write> Reporter for TerminalReporter<W> {
    fn report(&mut self, event: &Event<'_>) -> Result<(), ReportError> {
        match event {
            Event::RunStarted {
                target,
                profile,
                total,
            } => {
                let about = match &target.hello {
                    // A background-task runner's hello (protocol 1, no features) has no store
                    // parts to name.
                    Ok(h) if h.protocol < 2 && h.features.is_empty() => format!(
                        "{} {}{}, layout {}",
                        h.name,
                        h.version,
                        crate::markdown::configuration_words(&target.configuration),
                        h.layout
                    ),
                    Ok(h) => format!(
                        "{} {}{}, layout {}, {}",
                        h.name,
                        h.version,
                        crate::markdown::configuration_words(&target.configuration),
                        h.layout,
                        parts_text(&h.features)
                    ),
                    Err(e) => format!("hello failed: {e}"),
                };
                let mut text = format!(
                    "running {total} scenario{} against {} ({about}) under profile {profile}\n",
                    if *total == 1 { "" } else { "s" },
                    target.spec
                );
                if let Err(e) = &target.hello {
                    // Said once here; the scenarios are not run.
                    text.push_str(&format!(
                        "{} the target could not start, so no scenario was run\n  target:   {}\n  error:    {e}\n",
                        self.paint(style::ERROR, "ERROR"),
                        target.spec
                    ));
                    text.push_str(&stderr_block(&target.stderr));
                }
                self.emit(&text)?;
                if *total > 0 {
                    self.progress = progress_bar(
                        &self.output,
                        *total as u64,
                        "{bar:30} {pos}/{len} {wide_msg}",
                    );
                }
            }
            Event::ScenarioFinished { result, .. } => {
                let text = match result.kind() {
                    OutcomeKind::Pass => String::new(),
                    OutcomeKind::Skip => format!(
                        "{} {}: {}\n",
                        self.paint(style::YELLOW, "SKIP"),
                        result.id,
                        result.reason().unwrap_or_default()
                    ),
                    // Said once for the run, at its end.
                    OutcomeKind::NotJudged
                        if taskproof_report::result::not_judged_for_agents_only(result)
                            .is_some() =>
                    {
                        String::new()
                    }
                    OutcomeKind::NotJudged => format!(
                        "{} {}: {}\n",
                        self.paint(style::YELLOW, "NOT JUDGED"),
                        result.id,
                        result.reason().unwrap_or_default()
                    ),
                    OutcomeKind::Fail => {
                        format!(
                            "{} {}\n",
                            self.paint(style::FAIL, "FAIL"),
                            failure_text(result)
                        )
                    }
                    OutcomeKind::Error => {
                        format!(
                            "{} {}\n",
                            self.paint(style::ERROR, "ERROR"),
                            failure_text(result)
                        )
                    }
                };
                let mut text = text;
                if let Some((judged, of)) = result.partial() {
                    text.push_str(&format!(
                        "{} {}: passed, {judged} of {of} steps judged\n",
                        self.paint(style::YELLOW, "PARTIAL"),
                        result.id
                    ));
                }
                // The steps not judged, one line per reason.
                let mut by_reason: Vec<(&str, Vec<usize>)> = Vec::new();
                for skip in &result.skipped_steps {
                    match by_reason.iter_mut().find(|(r, _)| *r == skip.reason) {
                        Some((_, steps)) => steps.push(skip.step),
                        None => by_reason.push((&skip.reason, vec![skip.step])),
                    }
                }
                for (reason, steps) in by_reason {
                    let steps: Vec<String> = steps.iter().map(|i| format!("steps[{i}]")).collect();
                    text.push_str(&format!(
                        "{} {} {}: {reason}\n",
                        self.paint(style::YELLOW, "SKIP"),
                        result.id,
                        steps.join(", ")
                    ));
                }
                for n in &result.notes {
                    text.push_str(&format!(
                        "{} {}: {n}\n",
                        self.paint(style::CYAN, "NOTE"),
                        result.id
                    ));
                }
                if !text.is_empty() {
                    self.emit(&text)?;
                }
                if let Some(pb) = &self.progress {
                    pb.set_message(result.id.clone());
                    pb.inc(1);
                }
            }
            // The failure block of the scenario says what a step needs to say.
            Event::StepFinished { .. } => {}
            Event::RaceFinished { report } | Event::CheckFinished { report } => {
                let text = report.terminal(self.color);
                self.emit(&text)?;
            }
            Event::FuzzStarted { plan, cases } => {
                self.emit(&plan.terminal(self.color))?;
                self.progress = progress_bar(
                    &self.output,
                    u64::from(*cases),
                    "{bar:40} {pos}/{len} cases {per_sec} {eta} {msg}",
                );
            }
            Event::FuzzProgress { cases, message } => {
                if let Some(pb) = &self.progress {
                    pb.set_position(u64::from(*cases));
                    if let Some(message) = message {
                        pb.set_message(message.to_string());
                    }
                }
            }
            Event::FuzzFinding { finding } => {
                if let Some(pb) = &self.progress {
                    pb.set_message("");
                }
                self.emit(&finding.terminal(self.color))?;
            }
            Event::FuzzFinished { report } => {
                if let Some(pb) = self.progress.take() {
                    pb.finish_and_clear();
                }
                self.emit(&report.terminal(self.color))?;
            }
            Event::RunFinished { suite } => {
                if let Some(pb) = self.progress.take() {
                    pb.finish_and_clear();
                }
                let mut once = String::new();
                let agents: Vec<&ScenarioResult> = suite
                    .scenarios
                    .iter()
                    .filter(|r| taskproof_report::result::not_judged_for_agents_only(r).is_some())
                    .collect();
                if !agents.is_empty() {
                    let mut parts: Vec<&str> = agents
                        .iter()
                        .filter_map(|r| taskproof_report::result::not_judged_for_agents_only(r))
                        .flatten()
                        .map(|f| f.as_str())
                        .collect();
                    parts.sort_unstable();
                    parts.dedup();
                    once.push_str(&format!(
                        "{} {} scenario{} on what only an agent session has ({}), which a store does not declare: {}\n",
                        self.paint(style::YELLOW, "NOT JUDGED"),
                        agents.len(),
                        if agents.len() == 1 { "" } else { "s" },
                        parts.join(", "),
                        agents.iter().map(|r| r.id.as_str()).collect::<Vec<_>>().join(", ")
                    ));
                }
                for n in taskproof_report::result::target_notes_once(suite) {
                    once.push_str(&format!("{} {n}\n", self.paint(style::CYAN, "NOTE")));
                }
                if let Some(line) = suite
                    .starts
                    .as_ref()
                    .and_then(|s| s.line(&suite.target.spec))
                {
                    once.push_str(&format!("{} {line}\n", self.paint(style::CYAN, "NOTE")));
                }
                if !once.is_empty() {
                    self.emit(&once)?;
                }
                let classes = taskproof_report::result::by_class_lines(suite);
                if !classes.is_empty() {
                    let mut text = String::from("failed, by consequence (most severe first):\n");
                    for (class, line) in &classes {
                        let line = format!("  {line}");
                        // Lost data is painted as a failure, the other classes plain.
                        text.push_str(&if *class == taskproof_core::rule::Class::DataLoss {
                            self.paint(style::FAIL, &line)
                        } else {
                            line
                        });
                        text.push('\n');
                    }
                    self.emit(&text)?;
                }
                let s = suite.summary();
                let line = s.line();
                let line = if s.ok() {
                    self.paint(style::GREEN, &line)
                } else {
                    self.paint(style::FAIL, &line)
                };
                self.emit(&format!("{line}\n"))?;
            }
        }
        Ok(())
    }
}

/// The optional parts a target declares, as the run's first line names its scope: `every
/// optional part` (of a store), or the parts it has and `without` the ones it does not
/// (whose scenarios are not judged); then `and session_list` when it declares the session's
/// own list, which only agent targets have (a store without it lacks nothing a store has).
pub fn parts_text(
    declared: &std::collections::BTreeSet<taskproof_core::protocol::Feature>,
) -> String {
    use taskproof_core::protocol::Feature;
    let (has, lacks): (Vec<Feature>, Vec<Feature>) = Feature::OF_A_STORE
        .into_iter()
        .partition(|f| declared.contains(f));
    let words = |v: &[Feature]| v.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ");
    let store = match (has.is_empty(), lacks.is_empty()) {
        (_, true) => "every optional part".to_string(),
        (true, false) => format!("no optional part (without {})", words(&lacks)),
        (false, false) => format!("parts [{}], without [{}]", words(&has), words(&lacks)),
    };
    let agent: Vec<Feature> = Feature::ALL
        .into_iter()
        .filter(|f| !Feature::OF_A_STORE.contains(f) && declared.contains(f))
        .collect();
    if agent.is_empty() {
        store
    } else {
        format!("{store}, and {}", words(&agent))
    }
}

/// The widest line of a failure's request, expected, actual and why; a longer value goes on
/// as many lines as it needs, each indented under the first.
const FOLD_WIDTH: usize = 120;

/// The most lines a folded value takes; the rest is cut, saying how much.
const FOLD_LINES: usize = 8;

/// `label` and `text` on lines of at most [`FOLD_WIDTH`] characters, broken after a `,` or a
/// space where there is one (inside a long word, where there is none), each line after the
/// first indented as wide as `label`; at most [`FOLD_LINES`] of them.
fn folded(label: &str, text: &str) -> String {
    let room = FOLD_WIDTH.saturating_sub(label.len()).max(20);
    let indent = " ".repeat(label.len());
    let mut out = String::new();
    let mut rest = text;
    let mut first = true;
    loop {
        let chars = rest.chars().count();
        let line = if chars <= room {
            rest
        } else {
            let limit = rest.char_indices().nth(room).map_or(rest.len(), |(i, _)| i);
            let cut = rest[..limit]
                .rfind([',', ' '])
                .map(|i| i + 1)
                .filter(|&i| i > limit / 2)
                .unwrap_or(limit);
            &rest[..cut]
        };
        out.push_str(if first { label } else { &indent });
        out.push_str(line.trim_end());
        out.push('\n');
        first = false;
        rest = rest[line.len()..].trim_start();
        if rest.is_empty() {
            return out;
        }
        if out.lines().count() == FOLD_LINES {
            out.push_str(&format!(
                "{indent}… ({} more characters)\n",
                rest.chars().count()
            ));
            return out;
        }
    }
}

fn shown(v: &Value) -> String {
    let text = v.to_string();
    if text.len() <= MAX_SHOWN {
        return text;
    }
    let mut cut = MAX_SHOWN;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..cut], text.len())
}

/// A failed or errored scenario as plain text: the id and title, the file, the rules, each
/// failure's step, request, expected and actual answer, and the adapter's stderr (its tail).
/// Also the JUnit failure description.
pub fn failure_text(r: &ScenarioResult) -> String {
    let mut out = format!("{}: {}\n", r.id, r.title);
    out.push_str(&format!("  file:     {}\n", r.file.display()));
    // A failure counts against the failing steps' rules; an error against none.
    let rules = match r.kind() {
        OutcomeKind::Fail => {
            taskproof_core::rule::join(&r.failed_rules().into_iter().collect::<Vec<_>>(), ", ")
        }
        OutcomeKind::Error => format!(
            "none broken: the target failed before a verdict (the scenario tests {})",
            taskproof_core::rule::join(&r.rules, ", ")
        ),
        _ => taskproof_core::rule::join(&r.rules, ", "),
    };
    out.push_str(&format!("  rules:    {rules}\n"));
    if let Some(c) = r.class_words() {
        out.push_str(&format!("  class:    {c}\n"));
    }
    match &r.result {
        Err(e) => {
            if let Some(i) = e.step {
                out.push_str(&format!("  at:       steps[{i}]\n"));
            }
            if let Some(req) = &e.request {
                out.push_str(&format!("  request:  {}\n", shown(req)));
            }
            out.push_str(&format!("  error:    {}\n", e.message));
        }
        Ok(_) => {
            for f in r.failures() {
                match (f.step, &f.step_json) {
                    (Some(i), Some(j)) => {
                        out.push_str(&format!("  steps[{i}]: {}\n", shown(j)));
                    }
                    (Some(i), None) => out.push_str(&format!("  steps[{i}]\n")),
                    (None, _) => out.push_str("  after the last step\n"),
                }
                if let Some(s) = &f.session {
                    out.push_str(&format!("    session:  {s}\n"));
                }
                if let Some(req) = &f.request {
                    out.push_str(&folded("    request:  ", &shown(req)));
                }
                out.push_str(&folded("    expected: ", &shown(&f.expected)));
                out.push_str(&folded("    actual:   ", &shown(&f.actual)));
                out.push_str(&folded("    why:      ", &f.reason));
                if f.rules != r.rules {
                    out.push_str(&format!(
                        "    rules:    {}\n",
                        taskproof_core::rule::join(&f.rules, ", ")
                    ));
                }
                if let Some(n) = &f.note {
                    out.push_str(&format!("    note:     {n}\n"));
                }
                if let Some(w) = &f.witness {
                    out.push_str(&witness_block(w));
                }
            }
        }
    }
    out.push_str(&stderr_block(&r.stderr));
    out.trim_end().to_string()
}

/// What happened between the requests before a failure, under `witness:`.
fn witness_block(w: &taskproof_report::result::EventWitness) -> String {
    let files = |f: &Option<Vec<String>>| match f {
        None => "(not visible: the target's layout is opaque)".to_string(),
        Some(v) if v.is_empty() => "(none)".to_string(),
        Some(v) => v.join(", "),
    };
    let mut out = format!(
        "    witness:  {:.1} s after {}\n      files before it: {}\n      files now:       {}\n",
        w.seconds,
        w.event,
        files(&w.before),
        files(&w.after)
    );
    let gone = w.gone();
    if !gone.is_empty() {
        out.push_str(&format!("      gone since it:   {}\n", gone.join(", ")));
    }
    for v in &w.vanished {
        out.push_str(&format!("      vanished:        {v}\n"));
    }
    out
}

/// The tail of an adapter's stderr, indented under `adapter stderr:`; empty when it said
/// nothing.
fn stderr_block(stderr: &str) -> String {
    let mut out = String::new();
    let stderr = stderr.trim_end();
    if !stderr.is_empty() {
        let lines: Vec<&str> = stderr.lines().collect();
        let skip = lines.len().saturating_sub(MAX_STDERR_LINES);
        out.push_str("  adapter stderr:\n");
        if skip > 0 {
            out.push_str(&format!("    … {skip} earlier lines\n"));
        }
        for l in &lines[skip..] {
            out.push_str(&format!("    | {l}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_values_fold_under_their_label() {
        let long = format!("{{\"a\":\"{}\",\"b\":1}}", "x".repeat(150));
        let text = super::folded("    actual:   ", &long);
        assert!(text.lines().count() > 1, "{text}");
        assert!(
            text.lines().all(|l| l.chars().count() <= super::FOLD_WIDTH),
            "{text}"
        );
        assert!(
            text.lines()
                .skip(1)
                .all(|l| l.starts_with("              ")),
            "{text}"
        );
        let joined: String = text.lines().map(str::trim).collect();
        assert_eq!(
            joined.strip_prefix("actual:").map(str::trim_start),
            Some(long.as_str())
        );
        let longer = "word ".repeat(1000);
        let cut = super::folded("  why: ", &longer);
        assert_eq!(cut.lines().count(), super::FOLD_LINES + 1, "{cut}");
        assert!(cut.trim_end().ends_with("more characters)"), "{cut}");
        assert_eq!(super::folded("  why: ", "short"), "  why: short\n");
    }

    use super::*;

    fn output(is_terminal: bool, is_ci: bool) -> Output {
        Output {
            is_terminal,
            stderr_is_terminal: is_terminal,
            is_ci,
            no_color: false,
        }
    }

    /// A writer whose reader went away after `room` bytes.
    struct ClosedAfter {
        room: usize,
        written: Vec<u8>,
    }

    impl Write for ClosedAfter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.written.len() + buf.len() > self.room {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_ends_the_output_quietly() {
        let out = ClosedAfter {
            room: 3,
            written: Vec::new(),
        };
        let mut r = TerminalReporter::new(out, output(false, true), ColorChoice::Never);
        assert!(r.emit("first line\n").is_ok());
        assert!(r.emit("second line\n").is_ok());
        assert!(r.closed);
        assert!(r.out.written.is_empty());
    }

    /// The first line names a store's scope among a store's parts; the session's own list,
    /// an agent's part, is named only when declared.
    #[test]
    fn the_scope_names_store_parts_and_then_the_agents_own_list() {
        use taskproof_core::protocol::Feature;
        let store: std::collections::BTreeSet<Feature> = Feature::OF_A_STORE.into();
        assert_eq!(parts_text(&store), "every optional part");
        let mut agent = store.clone();
        agent.remove(&Feature::EdgeRemoval);
        agent.insert(Feature::SessionList);
        assert_eq!(
            parts_text(&agent),
            "parts [delete, claim, edges, metadata, owner, active_form, edges_at_create, lists], without [edge_removal], and session_list"
        );
        assert_eq!(
            parts_text(&Default::default()),
            "no optional part (without delete, claim, edges, metadata, owner, active_form, edge_removal, edges_at_create, lists)"
        );
    }
}
