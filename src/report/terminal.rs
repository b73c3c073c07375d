//! The terminal reporter: a progress bar while scenarios run (only on a terminal, outside
//! CI), a block per failed or errored scenario with everything needed to act on it, a line
//! per skip (of a scenario or of a step), and the summary `N passed, N failed, N errors,
//! N skipped` alone on the last line. A target that cannot start is reported once, at the
//! start. A reader that goes away (`| head`) ends the output quietly: the run finishes, its
//! file reports are written, and nothing more is printed.
//!
//! Whether stdout is a terminal, whether this is CI and what the color setting is are passed
//! in ([`TerminalConfig`]), never asked here, so every output choice can be tested.

use std::io::Write;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use super::events::{Event, ReportError, Reporter};
use super::result::{OutcomeKind, ScenarioResult};

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// What the terminal reporter knows about where it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalConfig {
    pub color: ColorChoice,
    /// Stdout is a terminal.
    pub is_terminal: bool,
    /// Stderr is a terminal (where the progress bar goes).
    pub stderr_is_terminal: bool,
    /// The `CI` environment variable is set.
    pub is_ci: bool,
    /// The `NO_COLOR` environment variable is set and not empty.
    pub no_color: bool,
}

impl TerminalConfig {
    pub fn use_color(&self) -> bool {
        match self.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => self.is_terminal && !self.no_color,
        }
    }

    pub fn show_progress(&self) -> bool {
        self.stderr_is_terminal && !self.is_ci
    }
}

/// The longest JSON value shown in full; longer ones are cut with a note.
const MAX_SHOWN: usize = 2000;
/// The most stderr lines shown per failure (the tail).
const MAX_STDERR_LINES: usize = 30;

pub struct TerminalReporter<W: Write> {
    out: W,
    color: bool,
    progress: Option<ProgressBar>,
    show_progress: bool,
    /// Set once stdout's reader went away: nothing more is written.
    closed: bool,
}

impl<W: Write> TerminalReporter<W> {
    pub fn new(out: W, config: TerminalConfig) -> TerminalReporter<W> {
        TerminalReporter {
            out,
            color: config.use_color(),
            progress: None,
            show_progress: config.show_progress(),
            closed: false,
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
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
                    Ok(h) => {
                        let features: Vec<&str> = h.features.iter().map(|f| f.as_str()).collect();
                        format!(
                            "{} {}, layout {}, features [{}]",
                            h.name,
                            h.version,
                            h.layout,
                            features.join(", ")
                        )
                    }
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
                        self.paint("1;35", "ERROR"),
                        target.spec
                    ));
                    text.push_str(&stderr_block(&target.stderr));
                }
                self.emit(&text)?;
                if self.show_progress && *total > 0 {
                    let pb = ProgressBar::with_draw_target(
                        Some(*total as u64),
                        ProgressDrawTarget::stderr(),
                    );
                    if let Ok(style) =
                        ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}")
                    {
                        pb.set_style(style);
                    }
                    self.progress = Some(pb);
                }
            }
            Event::ScenarioFinished { result, .. } => {
                let text = match result.kind() {
                    OutcomeKind::Pass => String::new(),
                    OutcomeKind::Skip => format!(
                        "{} {}: {}\n",
                        self.paint("33", "SKIP"),
                        result.id,
                        result.reason().unwrap_or_default()
                    ),
                    OutcomeKind::Fail => {
                        format!("{} {}\n", self.paint("1;31", "FAIL"), failure_text(result))
                    }
                    OutcomeKind::Error => {
                        format!("{} {}\n", self.paint("1;35", "ERROR"), failure_text(result))
                    }
                };
                let mut text = text;
                for skip in &result.skipped_steps {
                    text.push_str(&format!(
                        "{} {} steps[{}]: {}\n",
                        self.paint("33", "SKIP"),
                        result.id,
                        skip.step,
                        skip.reason
                    ));
                }
                for n in &result.notes {
                    text.push_str(&format!(
                        "{} {}: {n}\n",
                        self.paint("36", "NOTE"),
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
            Event::RunFinished { suite } => {
                if let Some(pb) = self.progress.take() {
                    pb.finish_and_clear();
                }
                let s = suite.summary();
                let line = s.line();
                let line = if s.ok() {
                    self.paint("32", &line)
                } else {
                    self.paint("1;31", &line)
                };
                self.emit(&format!("{line}\n"))?;
            }
        }
        Ok(())
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
    out.push_str(&format!("  rules:    {}\n", r.rules.join(", ")));
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
                    out.push_str(&format!("    request:  {}\n", shown(req)));
                }
                out.push_str(&format!("    expected: {}\n", shown(&f.expected)));
                out.push_str(&format!("    actual:   {}\n", shown(&f.actual)));
                out.push_str(&format!("    why:      {}\n", f.reason));
                if f.rules != r.rules {
                    out.push_str(&format!("    rules:    {}\n", f.rules.join(", ")));
                }
                if let Some(n) = &f.note {
                    out.push_str(&format!("    note:     {n}\n"));
                }
            }
        }
    }
    out.push_str(&stderr_block(&r.stderr));
    out.trim_end().to_string()
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
    use super::*;

    fn config(
        color: ColorChoice,
        is_terminal: bool,
        is_ci: bool,
        no_color: bool,
    ) -> TerminalConfig {
        TerminalConfig {
            color,
            is_terminal,
            stderr_is_terminal: is_terminal,
            is_ci,
            no_color,
        }
    }

    #[test]
    fn color_follows_the_flag_the_terminal_and_no_color() {
        assert!(config(ColorChoice::Auto, true, false, false).use_color());
        assert!(!config(ColorChoice::Auto, false, false, false).use_color());
        assert!(!config(ColorChoice::Auto, true, false, true).use_color());
        assert!(config(ColorChoice::Always, false, false, true).use_color());
        assert!(!config(ColorChoice::Never, true, false, false).use_color());
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
        let mut r = TerminalReporter::new(out, config(ColorChoice::Never, false, true, false));
        assert!(r.emit("first line\n").is_ok());
        assert!(r.emit("second line\n").is_ok());
        assert!(r.closed);
        assert!(r.out.written.is_empty());
    }

    #[test]
    fn the_progress_bar_needs_a_terminal_outside_ci() {
        assert!(config(ColorChoice::Auto, true, false, false).show_progress());
        assert!(!config(ColorChoice::Auto, true, true, false).show_progress());
        assert!(!config(ColorChoice::Auto, false, false, false).show_progress());
    }
}
