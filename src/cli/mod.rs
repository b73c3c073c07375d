//! The command line: the tree of commands and their dispatch ([`app`]), the option groups
//! they share ([`common`]), one file per command, and the mapping of errors to exit codes
//! (see [`exit`]).

pub mod app;
pub mod bisect;
pub mod check;
pub mod claims;
pub mod common;
pub mod exit;
pub mod fuzz;
pub mod hold;
pub mod judge;
pub mod log;
pub mod matrix;
pub mod mcp;
pub mod mcp_draft;
pub mod profile;
pub mod race;
pub mod race_background;
pub mod record;
pub mod run;
pub mod scenarios;
pub mod seconds;
pub mod serve;
pub mod serve_background;
pub mod timeline;
pub mod verdict;

pub use seconds::Seconds;
pub use verdict::Verdict;

/// `--color`: when to colour the terminal output. The reporters take the library's plain
/// [`ColorChoice`](taskproof_report::output::ColorChoice); clap's value types stay here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Color {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    Always,
    Never,
}

impl From<Color> for taskproof_report::output::ColorChoice {
    fn from(c: Color) -> Self {
        match c {
            Color::Auto => Self::Auto,
            Color::Always => Self::Always,
            Color::Never => Self::Never,
        }
    }
}

/// `--drive`: how Claude Code targets are driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Drive {
    /// `-p --input-format stream-json --output-format stream-json`.
    Print,
    /// The interactive terminal UI in a pseudo-terminal.
    Terminal,
}

impl From<Drive> for taskproof_session::Drive {
    fn from(d: Drive) -> Self {
        match d {
            Drive::Print => Self::Print,
            Drive::Terminal => Self::Terminal,
        }
    }
}

use std::io::Write;

pub use app::{Cli, Command, main};

/// Writes `text` to stdout. A reader that went away (`taskproof scenarios list | head -2`)
/// is a normal, quiet end, not an error; any other failure is one (exit 2).
pub fn print_stdout(text: &str) -> Verdict {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Verdict::Clean,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Verdict::Clean,
        Err(e) => {
            eprintln!("taskproof: failed to write to standard output: {e}");
            Verdict::Usage
        }
    }
}

/// Makes the target ready before any session opens (for `claude-code@VERSION`, the npm
/// install into the cache), so that a download is never charged to a session's start-up or
/// request limit. A target that cannot be made ready is the target's failure: exit 3.
pub(crate) fn prepare_target(target: &taskproof_targets::TargetSpec) -> Option<Verdict> {
    match target.prepare() {
        Ok(()) => None,
        Err(e) => {
            eprintln!("taskproof: failed to prepare the target {target}: {e}");
            Some(Verdict::TargetBroke)
        }
    }
}
