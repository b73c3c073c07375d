//! What a command concluded, and the one place it becomes an exit status ([`Verdict`], after
//! nextest's `ExpectedError::process_exit_code`); and the one reporter set every command
//! builds from `--report` ([`Reporters`]), which keeps the first error any reporter met so
//! that no report error is dropped.
//!
//! `run`, `race`, `fuzz` and `check` each say what they found as a [`Verdict`] and hand their
//! events to a [`Reporters`]; [`conclude`] turns both into the exit status of
//! [`super::exit`]: a report that could not be written is a usage error (2), whatever the
//! verdict.

use super::exit;
use super::run::ReportSpec;
use taskproof_report::{Event, ReportError, Reporter};
use taskproof_reporters::json::JsonReporter;
use taskproof_reporters::junit::JunitReporter;
use taskproof_reporters::markdown::MarkdownReporter;

/// What a command concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Done, nothing found (skips are fine).
    Clean,
    /// A verdict against the target: a failed scenario, an anomaly, a divergence, a finding.
    Found,
    /// The target broke before every verdict was in: it could not start, or crashed, hung or
    /// broke the protocol (and nothing failed: a failure is a verdict and wins).
    TargetBroke,
    /// The command could not run as asked, or could not write what it was asked to.
    Usage,
    /// Hook mode (`check --stdin`): the change is refused; stderr goes to the model.
    HookRefused,
    /// Hook mode: the hook itself could not judge (unreadable input); Claude Code lets the
    /// action go on and shows stderr to the user.
    HookBroken,
}

impl Verdict {
    /// The exit status of this verdict (docs/reports.md, "Exit status").
    pub fn process_exit_code(self) -> i32 {
        match self {
            Verdict::Clean => exit::OK,
            Verdict::Found => exit::FOUND,
            Verdict::TargetBroke => exit::TARGET,
            Verdict::Usage => exit::USAGE,
            Verdict::HookRefused => exit::HOOK_BLOCK,
            Verdict::HookBroken => exit::HOOK_ERROR,
        }
    }

    /// A scenario run: a failure is a verdict and wins; a failed hello, or errors alone, mean
    /// the target broke before all verdicts were in.
    pub fn of_suite(suite: &taskproof_report::result::SuiteResult) -> Verdict {
        let s = suite.summary();
        if suite.target.hello.is_err() {
            Verdict::TargetBroke
        } else if s.failed > 0 {
            Verdict::Found
        } else if s.errors > 0 {
            Verdict::TargetBroke
        } else {
            Verdict::Clean
        }
    }

    /// A race: an anomaly the profile promises against is a verdict; target errors alone are
    /// not.
    pub fn of_race(report: &taskproof_race::RaceReport) -> Verdict {
        if !report.found_nothing() {
            Verdict::Found
        } else if report.errors > 0 {
            Verdict::TargetBroke
        } else {
            Verdict::Clean
        }
    }

    /// A fuzz run: any confirmed divergence.
    pub fn of_fuzz(report: &taskproof_fuzz::run::Report) -> Verdict {
        if report.found.is_empty() {
            Verdict::Clean
        } else {
            Verdict::Found
        }
    }

    /// A background race: a task notified other than once, or against its kill's answer,
    /// or left running.
    pub fn of_bg_race(report: &taskproof_background::race::BgRaceReport) -> Verdict {
        if report.ok() {
            Verdict::Clean
        } else {
            Verdict::Found
        }
    }

    /// A folder audit: any finding.
    pub fn of_check(report: &taskproof_check::run::Report) -> Verdict {
        if report.is_clean() {
            Verdict::Clean
        } else {
            Verdict::Found
        }
    }
}

/// The reporters of one command, in order: the file reports `--report` asked for, then the
/// view on stdout (the terminal, or `check --json`'s printer), so that the terminal's summary
/// stays the last line printed.
pub struct Reporters {
    reporters: Vec<Box<dyn Reporter>>,
    error: Option<ReportError>,
}

impl Reporters {
    /// The file reporters of `specs`, then `stdout`.
    pub fn new(specs: &[ReportSpec], stdout: Box<dyn Reporter>) -> Reporters {
        let mut reporters: Vec<Box<dyn Reporter>> = specs.iter().map(file_reporter).collect();
        reporters.push(stdout);
        Reporters {
            reporters,
            error: None,
        }
    }

    /// Reports `event` to every reporter; the first error is kept for [`conclude`], and the
    /// others still see the event (the terminal still prints when a file cannot be written).
    /// A reader that went away (`| head`) is a normal end, not an error.
    pub fn emit(&mut self, event: &Event<'_>) {
        for r in &mut self.reporters {
            match r.report(event) {
                Ok(()) => {}
                Err(ReportError::Terminal(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
        }
    }

    /// The first error a reporter met, if any.
    pub fn finish(self) -> Result<(), ReportError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The file reporter of one `--report KIND:PATH`.
fn file_reporter(spec: &ReportSpec) -> Box<dyn Reporter> {
    match spec {
        ReportSpec::Json(p) => Box::new(JsonReporter { path: p.clone() }),
        ReportSpec::Junit(p) => Box::new(JunitReporter { path: p.clone() }),
        ReportSpec::Markdown(p) => Box::new(MarkdownReporter { path: p.clone() }),
    }
}

/// The exit status of `command`: a report error (printed as `taskproof COMMAND: …`) is a
/// usage error whatever the verdict; else the verdict's.
pub fn conclude(command: &str, reporters: Reporters, verdict: Verdict) -> Verdict {
    match reporters.finish() {
        Err(e) => {
            eprintln!("taskproof {command}: {e}");
            Verdict::Usage
        }
        Ok(()) => verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_keeps_its_exit_code() {
        assert_eq!(Verdict::Clean.process_exit_code(), 0);
        assert_eq!(Verdict::Found.process_exit_code(), 1);
        assert_eq!(Verdict::Usage.process_exit_code(), 2);
        assert_eq!(Verdict::TargetBroke.process_exit_code(), 3);
        // Claude Code's convention in hook mode: 2 refuses the action, 1 is a hook that
        // could not judge (the action goes on).
        assert_eq!(Verdict::HookRefused.process_exit_code(), 2);
        assert_eq!(Verdict::HookBroken.process_exit_code(), 1);
    }

    /// A reporter that fails every event with `error`.
    struct Failing(fn() -> ReportError);

    impl Reporter for Failing {
        fn report(&mut self, _: &Event<'_>) -> Result<(), ReportError> {
            Err((self.0)())
        }
    }

    /// A reporter that counts the events it saw.
    struct Counting(std::rc::Rc<std::cell::Cell<usize>>);

    impl Reporter for Counting {
        fn report(&mut self, _: &Event<'_>) -> Result<(), ReportError> {
            self.0.set(self.0.get() + 1);
            Ok(())
        }
    }

    fn event() -> Event<'static> {
        Event::FuzzProgress {
            cases: 1,
            message: None,
        }
    }

    #[test]
    fn a_report_error_is_kept_and_beats_the_verdict_while_the_others_still_report() {
        let seen = std::rc::Rc::new(std::cell::Cell::new(0));
        let mut r = Reporters::new(&[], Box::new(Counting(seen.clone())));
        r.reporters.insert(
            0,
            Box::new(Failing(|| ReportError::Write {
                path: "r.json".into(),
                source: std::io::Error::other("disk full"),
            })),
        );
        r.emit(&event());
        r.emit(&event());
        assert_eq!(seen.get(), 2, "the terminal still saw both events");
        assert_eq!(conclude("run", r, Verdict::Clean), Verdict::Usage);
    }

    #[test]
    fn a_reader_that_went_away_is_no_error() {
        let mut r = Reporters::new(
            &[],
            Box::new(Failing(|| {
                ReportError::Terminal(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            })),
        );
        r.emit(&event());
        assert_eq!(conclude("check", r, Verdict::Found), Verdict::Found);
    }
}
