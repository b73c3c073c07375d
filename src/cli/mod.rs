//! The command line: clap definitions, dispatch, and the mapping of errors to exit codes
//! (see [`exit`]).

pub mod bisect;
pub mod check;
pub mod claims;
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

use clap::{Parser, Subcommand};

/// Conformance test harness, race harness and fuzzer for agent task stores.
#[derive(Debug, Parser)]
#[command(name = "taskproof", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenario files against a target and report pass, fail, skip or error for each.
    Run(run::Args),
    /// Run the whole suite against a target and write what it did as a recorded profile.
    Record(record::Args),
    /// Compare recorded profiles (`diff A B`) or list the built-in ones, without a target.
    Profile(profile::Args),
    /// Race concurrent writers against one store and count what they lose.
    Race(race::Args),
    /// Find which published version of a target changed a behaviour: the last version
    /// before the change and the first after, each with its witness.
    Bisect(bisect::Args),
    /// The version ranges over which each task-store behaviour held across published
    /// versions (reports/claude-code/timeline.md and .html), bisecting each change.
    Timeline(timeline::Args),
    /// The release watch: record what a target does now and compare it with a recorded
    /// profile; exit 1 with the diff, per rule, when it changed.
    Hold(hold::Args),
    /// Race kills against the completions of background tasks and account for every task
    /// id: notified once, twice or never (docs/background.md).
    RaceBackground(race_background::Args),
    /// The register of claims about real products (repro/claims.toml): list them, or rerun
    /// their reproductions, which share no code with taskproof, and compare.
    Claims(claims::Args),
    /// Run random operation sequences against a target and its profile's model.
    Fuzz(fuzz::Args),
    /// Audit task folders on disk (and repair them with --fix), or judge a change as a
    /// Claude Code hook (--stdin).
    Check(check::Args),
    /// Judge one store with the suite, a short race and a fuzz budget, and end with one
    /// to-do list: each broken rule, lost data first, with its witness and replay line.
    Judge(judge::Args),
    /// Run the suite and a short race against several targets and build the conformance
    /// matrix (reports/matrix.md and .html), or rebuild it from saved reports.
    Matrix(matrix::Args),
    /// List the built-in scenarios, or export them to a folder.
    Scenarios(scenarios::Args),
    /// Serve a store over the adapter protocol on stdin/stdout (root from TASKPROOF_ROOT).
    Serve(serve::Args),
    /// Serve the reference background-task runner over the background protocol on
    /// stdin/stdout (session folder from TASKPROOF_ROOT).
    ServeBackground(serve_background::Args),
    /// Serve the strict store to agents as an MCP server on stdio (`claude mcp add taskproof
    /// -- taskproof mcp`).
    Mcp(mcp::Args),
    /// Write a draft mapping file for an MCP task server (an mcp:COMMAND target), from its
    /// tool list.
    McpDraft(mcp_draft::Args),
    /// Show a list's audit log (the changes `taskproof mcp` and the strict store recorded).
    Log(log::Args),
}

/// Parses the command line, runs the command and returns the process exit code: every
/// command says what it concluded as a [`Verdict`], and [`Verdict::process_exit_code`] is the
/// one place a verdict becomes a code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let verdict = if e.use_stderr() {
                Verdict::Usage
            } else {
                Verdict::Clean
            };
            let _ = e.print();
            return verdict.process_exit_code();
        }
    };
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Record(a) => record::run(a),
        Command::Profile(a) => profile::run(a),
        Command::Race(a) => race::run(a),
        Command::Bisect(a) => bisect::run(a),
        Command::Timeline(a) => timeline::run(a),
        Command::Hold(a) => hold::run(a),
        Command::RaceBackground(a) => race_background::run(a),
        Command::Claims(a) => claims::run(a),
        Command::Fuzz(a) => fuzz::run(a),
        Command::Check(a) => check::run(a),
        Command::Judge(a) => judge::run(a),
        Command::Matrix(a) => matrix::run(a),
        Command::Scenarios(a) => scenarios::run(a),
        Command::Serve(a) => serve::run(a),
        Command::ServeBackground(a) => serve_background::run(a),
        Command::Mcp(a) => mcp::run(a),
        Command::McpDraft(a) => mcp_draft::run(a),
        Command::Log(a) => log::run(a),
    };
    match result {
        Ok(verdict) => verdict,
        Err(e) => {
            eprintln!("taskproof: {e:#}");
            Verdict::Usage
        }
    }
    .process_exit_code()
}

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
