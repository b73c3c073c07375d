//! The tree of commands: a few top-level commands, families grouped under one name (after
//! nextest's `cargo-nextest/src/dispatch/app.rs`), and the old flat spellings, hidden from
//! `--help`, which still run and say their new name on stderr.
//!
//! Each command's options and body stay in its own file (`run.rs`, `race.rs`, …); this
//! file only says where each one sits in the tree.

use clap::{Parser, Subcommand};

use super::{
    Verdict, bisect, check, claims, fuzz, hold, log, matrix, mcp, mcp_draft, profile, race,
    race_background, record, run, scenarios, serve, serve_background, timeline,
};

/// Conformance test harness, race harness and fuzzer for agent task stores.
#[derive(Debug, Parser)]
#[command(name = "taskproof", version, about, long_about = None)]
#[command(after_help = "\
Maintaining taskproof's own evidence: `taskproof maint matrix` builds the conformance matrix,
`taskproof maint claims` lists or reruns the register of claims about real products.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level commands: at most ten are shown.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenario files against a target and report pass, fail, skip or error for each.
    Run(run::Args),
    /// Race concurrent writers against one store and count what they lose (`race
    /// background`: kills against background-task completions).
    Race(RaceCmd),
    /// Run random operation sequences against a target and its profile's model.
    Fuzz(fuzz::Args),
    /// Audit task folders on disk (and repair them with --fix), or judge a change as a
    /// Claude Code hook (--stdin).
    Check(check::Args),
    /// Judge one store with the suite, a short race and a fuzz budget, and end with one
    /// to-do list: each broken rule, lost data first, with its witness and replay line.
    Judge(super::judge::Args),
    /// Recorded profiles: record a target's behaviour, hold a target to a profile, diff,
    /// merge, probe and list them.
    Profile(profile::Args),
    /// Across published versions of a target: which one changed a behaviour (bisect), and
    /// the ranges over which each behaviour held (timeline).
    Versions(VersionsCmd),
    /// Serve a store over the adapter protocol, the reference background runner, or the
    /// strict store as an MCP server; show what a served list's audit log recorded.
    Serve(ServeCmd),
    /// Mapping files of mcp:COMMAND targets: draft one from a server's tool list.
    Mapping(MappingCmd),
    /// List the built-in scenarios, or export them to a folder.
    Scenarios(scenarios::Args),
    /// The project's own evidence: the conformance matrix and the register of claims.
    #[command(hide = true)]
    Maint(MaintCmd),

    // The old flat spellings: hidden, still run, and print their new name on stderr.
    #[command(hide = true)]
    Record(record::Args),
    #[command(hide = true)]
    Hold(hold::Args),
    #[command(hide = true)]
    Bisect(bisect::Args),
    #[command(hide = true)]
    Timeline(timeline::Args),
    #[command(hide = true)]
    RaceBackground(race_background::Args),
    #[command(hide = true)]
    ServeBackground(serve_background::Args),
    #[command(hide = true)]
    Mcp(mcp::Args),
    #[command(hide = true)]
    McpDraft(mcp_draft::Args),
    #[command(hide = true)]
    Log(log::Args),
    #[command(hide = true)]
    Matrix(matrix::Args),
    #[command(hide = true)]
    Claims(claims::Args),
}

/// `taskproof race`: the race of writers (its options), or `race background`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct RaceCmd {
    #[command(subcommand)]
    pub command: Option<RaceSub>,
    #[command(flatten)]
    pub writers: race::Args,
}

#[derive(Debug, Subcommand)]
pub enum RaceSub {
    /// Race kills against the completions of background tasks and account for every task
    /// id: notified once, twice or never (docs/background.md).
    Background(race_background::Args),
}

/// `taskproof versions`.
#[derive(Debug, clap::Args)]
pub struct VersionsCmd {
    #[command(subcommand)]
    pub command: VersionsSub,
}

#[derive(Debug, Subcommand)]
pub enum VersionsSub {
    /// Find which published version of a target changed a behaviour: the last version
    /// before the change and the first after, each with its witness.
    Bisect(bisect::Args),
    /// The version ranges over which each task-store behaviour held across published
    /// versions (reports/claude-code/timeline.md and .html), bisecting each change.
    Timeline(timeline::Args),
}

/// `taskproof serve`: one of the servers, or (the old spelling) the adapter's options alone,
/// which its help does not show.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
#[command(
    override_usage = "taskproof serve <COMMAND>",
    mut_arg("profile", |a| a.hide(true)),
    mut_arg("no_fsync", |a| a.hide(true)),
    after_long_help = "\
Examples:
  TASKPROOF_ROOT=/tmp/tasks taskproof serve adapter
  taskproof serve mcp --root /tmp/tasks --list team
  taskproof run --suite background --target 'bg-cmd:taskproof serve background'"
)]
pub struct ServeCmd {
    #[command(subcommand)]
    pub command: Option<ServeSub>,
    #[command(flatten)]
    pub adapter: serve::Args,
}

#[derive(Debug, Subcommand)]
pub enum ServeSub {
    /// Serve a store over the adapter protocol on stdin/stdout (root from TASKPROOF_ROOT).
    Adapter(serve::Args),
    /// Serve the reference background-task runner over the background protocol on
    /// stdin/stdout (session folder from TASKPROOF_ROOT).
    Background(serve_background::Args),
    /// Serve the strict store to agents as an MCP server on stdio (`claude mcp add
    /// taskproof -- taskproof serve mcp`).
    Mcp(mcp::Args),
    /// Show a list's audit log (the changes `taskproof serve mcp` and the strict store
    /// recorded).
    Log(log::Args),
}

/// `taskproof mapping`.
#[derive(Debug, clap::Args)]
pub struct MappingCmd {
    #[command(subcommand)]
    pub command: MappingSub,
}

#[derive(Debug, Subcommand)]
pub enum MappingSub {
    /// Write a draft mapping file for an MCP task server (an mcp:COMMAND target), from its
    /// tool list.
    Draft(mcp_draft::Args),
}

/// `taskproof maint`.
#[derive(Debug, clap::Args)]
pub struct MaintCmd {
    #[command(subcommand)]
    pub command: MaintSub,
}

#[derive(Debug, Subcommand)]
pub enum MaintSub {
    /// Run the suite and a short race against several targets and build the conformance
    /// matrix (reports/matrix.md and .html), or rebuild it from saved reports.
    Matrix(matrix::Args),
    /// The register of claims about real products (repro/claims.toml): list them, or rerun
    /// their reproductions, which share no code with taskproof, and compare.
    Claims(claims::Args),
}

/// Says on stderr that `taskproof OLD` is now spelled `taskproof NEW`; the command then runs
/// as before, so scripts keep working while they move.
fn renamed(old: &str, new: &str) {
    eprintln!("taskproof: `taskproof {old}` is now `taskproof {new}`; the old spelling still runs");
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
    match dispatch(cli.command) {
        Ok(verdict) => verdict,
        Err(e) => {
            eprintln!("taskproof: {e:#}");
            Verdict::Usage
        }
    }
    .process_exit_code()
}

/// Runs one parsed command.
fn dispatch(command: Command) -> anyhow::Result<Verdict> {
    match command {
        Command::Run(a) => run::run(a),
        Command::Race(RaceCmd {
            command: None,
            writers,
        }) => race::run(writers),
        Command::Race(RaceCmd {
            command: Some(RaceSub::Background(a)),
            ..
        }) => race_background::run(a),
        Command::Fuzz(a) => fuzz::run(a),
        Command::Check(a) => check::run(a),
        Command::Judge(a) => super::judge::run(a),
        Command::Profile(a) => profile::run(a),
        Command::Versions(v) => match v.command {
            VersionsSub::Bisect(a) => bisect::run(a),
            VersionsSub::Timeline(a) => timeline::run(a),
        },
        Command::Serve(ServeCmd {
            command: None,
            adapter,
        }) => {
            renamed("serve", "serve adapter");
            serve::run(adapter)
        }
        Command::Serve(ServeCmd {
            command: Some(s), ..
        }) => match s {
            ServeSub::Adapter(a) => serve::run(a),
            ServeSub::Background(a) => serve_background::run(a),
            ServeSub::Mcp(a) => mcp::run(a),
            ServeSub::Log(a) => log::run(a),
        },
        Command::Mapping(m) => match m.command {
            MappingSub::Draft(a) => mcp_draft::run(a),
        },
        Command::Scenarios(a) => scenarios::run(a),
        Command::Maint(m) => match m.command {
            MaintSub::Matrix(a) => matrix::run(a),
            MaintSub::Claims(a) => claims::run(a),
        },
        Command::Record(a) => {
            renamed("record", "profile record");
            record::run(a)
        }
        Command::Hold(a) => {
            renamed("hold", "profile hold");
            hold::run(a)
        }
        Command::Bisect(a) => {
            renamed("bisect", "versions bisect");
            bisect::run(a)
        }
        Command::Timeline(a) => {
            renamed("timeline", "versions timeline");
            timeline::run(a)
        }
        Command::RaceBackground(a) => {
            renamed("race-background", "race background");
            race_background::run(a)
        }
        Command::ServeBackground(a) => {
            renamed("serve-background", "serve background");
            serve_background::run(a)
        }
        Command::Mcp(a) => {
            renamed("mcp", "serve mcp");
            mcp::run(a)
        }
        Command::McpDraft(a) => {
            renamed("mcp-draft", "mapping draft");
            mcp_draft::run(a)
        }
        Command::Log(a) => {
            renamed("log", "serve log");
            log::run(a)
        }
        Command::Matrix(a) => {
            renamed("matrix", "maint matrix");
            matrix::run(a)
        }
        Command::Claims(a) => {
            renamed("claims", "maint claims");
            claims::run(a)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// `--help` lists at most ten commands, `judge` among them once it lands, besides clap's
    /// own `help`.
    #[test]
    fn help_lists_at_most_ten_commands_with_room_for_judge() {
        let app = Cli::command();
        let shown: Vec<&str> = app
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name())
            .collect();
        let with_judge = shown.len() + usize::from(!shown.contains(&"judge"));
        assert!(with_judge <= 10, "{shown:?}");
    }

    /// Every old flat spelling still parses, to the command its new spelling names, and is
    /// hidden from `--help`.
    #[test]
    fn every_old_spelling_still_parses_and_is_hidden() {
        let app = Cli::command();
        for (old, new) in [
            (&["record"][..], &["profile", "record"][..]),
            (
                &["hold", "-t", "naive", "-p", "strict"],
                &["profile", "hold", "-t", "naive", "-p", "strict"],
            ),
            (
                &[
                    "bisect",
                    "-t",
                    "claude-code@2.1.1..2.1.2",
                    "--scenario",
                    "rt01",
                ],
                &[
                    "versions",
                    "bisect",
                    "-t",
                    "claude-code@2.1.1..2.1.2",
                    "--scenario",
                    "rt01",
                ],
            ),
            (
                &["timeline", "--no-run"],
                &["versions", "timeline", "--no-run"],
            ),
            (&["race-background"], &["race", "background"]),
            (&["serve-background"], &["serve", "background"]),
            (&["mcp"], &["serve", "mcp"]),
            (&["log", "team"], &["serve", "log", "team"]),
            (
                &["mcp-draft", "node s.js"],
                &["mapping", "draft", "node s.js"],
            ),
            (
                &["matrix", "--from", "reports"],
                &["maint", "matrix", "--from", "reports"],
            ),
            (&["claims", "list"], &["maint", "claims", "list"]),
        ] {
            let parse = |words: &[&str]| {
                let line = std::iter::once("taskproof").chain(words.iter().copied());
                Cli::try_parse_from(line).unwrap_or_else(|e| panic!("{words:?}: {e}"))
            };
            let (was, is) = (parse(old), parse(new));
            let sub = app.find_subcommand(old[0]).expect(old[0]);
            assert!(sub.is_hide_set(), "{} is shown", old[0]);
            assert_ne!(
                std::mem::discriminant(&was.command),
                std::mem::discriminant(&is.command),
                "{old:?} parses as a new spelling"
            );
            let name = |c: &Command| format!("{c:?}");
            // The old spelling carries the same options as the new one: the same Args value,
            // wrapped one family level higher.
            let (was, is) = (name(&was.command), name(&is.command));
            let inner = was
                .split_once('(')
                .map(|(_, rest)| rest)
                .expect("a tuple variant");
            let inner = inner.strip_suffix(')').expect("a tuple variant");
            assert!(is.contains(inner), "{old:?}: {was} is not inside {is}");
        }
    }

    /// `serve` alone is the old spelling of `serve adapter` and takes the same options.
    #[test]
    fn serve_alone_is_the_adapter() {
        let parse = |words: &[&str]| {
            let line = std::iter::once("taskproof").chain(words.iter().copied());
            Cli::try_parse_from(line).unwrap_or_else(|e| panic!("{words:?}: {e}"))
        };
        let Command::Serve(ServeCmd {
            command: None,
            adapter,
        }) = parse(&["serve", "--profile", "cc-2.1.17"]).command
        else {
            panic!("serve alone is not the adapter's options");
        };
        assert_eq!(adapter.profile, "cc-2.1.17");
        let Command::Serve(ServeCmd {
            command: Some(ServeSub::Adapter(a)),
            ..
        }) = parse(&["serve", "adapter", "--profile", "cc-2.1.17"]).command
        else {
            panic!("serve adapter is not the adapter");
        };
        assert_eq!(a.profile, "cc-2.1.17");
    }
}
