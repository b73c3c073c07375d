//! `taskproof check`: audit task folders on disk, repair them, restore what vanished from
//! the hook's journal (`--restore`), or judge a change as a Claude Code hook (`--stdin`).

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;

use super::verdict::{Reporters, Verdict, conclude};
use taskproof_check::discover::default_root;
use taskproof_check::fix::RepairOutcome;
use taskproof_check::hook::{self, HookContext};
use taskproof_check::render;
use taskproof_check::restore::Into;
use taskproof_check::run::{self, Mode, Options};
use taskproof_check::{Repair, journal};
use taskproof_core::protocol::Layout;
use taskproof_report::output::Output;
use taskproof_report::{Event, Reporter};
use taskproof_reporters::json::JsonPrinter;
use taskproof_reporters::terminal::TerminalReporter;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Exit status: 0 clean, 1 findings (after --fix: findings left), 2 usage error.
With --stdin (a Claude Code hook): 0 lets the action go on (with a JSON systemMessage on
stdout when the task list could not be found or read, or already has problems the change did
not cause), 2 refuses it with what the change brings on stderr, 1 means the hook could not
read its input (the action goes on). See docs/check.md for the settings of each event; its
PostToolUse entry keeps the journal (~/.claude/tasks/.taskproof-journal/LIST.jsonl) that
lets check name the tasks that vanished and --restore write them back. With agent teams
on, a session's own list left out of reach of its running session (a resume on Claude Code
2.1.178 to 2.1.310) is named `stranded`, and --restore puts its tasks where the session reads.

Examples:
  taskproof check                         # every list under ~/.claude/tasks
  taskproof check ~/.claude/tasks/my-list --json
  taskproof check .tasks --layout s07 --dry-run
  taskproof check ~/.claude/tasks --fix
  taskproof check ~/.claude/tasks/my-list --restore  # into a new list my-list-restored-…
  echo '[{\"id\":\"1\",\"subject\":\"a\",\"status\":\"pending\",\"blockedBy\":[\"1\"]}]' | taskproof check --stdin")]
pub struct Args {
    /// A list folder or a folder of lists [default: $CLAUDE_CONFIG_DIR/tasks, else
    /// ~/.claude/tasks]. With --stdin: the list folder to judge the change against.
    pub path: Option<PathBuf>,
    /// How task files are named: claude-code ({id}.json) or s07 (task_{id}.json).
    /// Detected per list when not given.
    #[arg(long, value_parser = ["claude-code", "s07"])]
    pub layout: Option<String>,
    /// Print the report as JSON (format version 1).
    #[arg(long, conflicts_with = "stdin")]
    pub json: bool,
    /// Repair what is safe to repair (under the list's lock), printing each change.
    #[arg(long, conflicts_with = "stdin")]
    pub fix: bool,
    /// Print what --fix would change, and change nothing.
    #[arg(long, conflicts_with = "stdin")]
    pub dry_run: bool,
    /// Write back, from the hook's journal, the tasks that vanished: into a new list
    /// LIST-restored-YYYYMMDD-HHMMSS beside the old one (Claude Code would delete them again
    /// in the old one), never a task the agent deleted, never over a file. Tasks of a list
    /// out of reach of its running session go into the list that session reads.
    #[arg(long, conflicts_with_all = ["stdin", "fix", "dry_run"])]
    pub restore: bool,
    /// With --restore: write into a new list of this name instead.
    #[arg(long, value_name = "LIST", requires = "restore")]
    pub into: Option<String>,
    /// With --restore: write back into the list the tasks vanished from. Claude Code deletes
    /// them all again about 5 s after the next completion in that list, or after a new
    /// session opens on it, while they are all completed.
    #[arg(long, requires = "restore", conflicts_with = "into")]
    pub into_same_list: bool,
    /// Read this journal instead of the list's own (PATH must be one list).
    #[arg(long, value_name = "FILE", conflicts_with = "stdin")]
    pub journal: Option<PathBuf>,
    /// With --stdin: keep no journal of the list (check and --restore then cannot say what
    /// vanished from it).
    #[arg(long, requires = "stdin")]
    pub no_journal: bool,
    /// Hook mode: judge the change a Claude Code hook event on stdin describes (or a JSON
    /// array of tasks as a whole list); exit 2 with the reasons on stderr to refuse it.
    #[arg(long)]
    pub stdin: bool,
    #[command(flatten)]
    pub color: super::common::ColorOpt,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let env_root = || {
        default_root(
            std::env::var_os("CLAUDE_CONFIG_DIR"),
            std::env::var_os("HOME"),
        )
    };
    let layout: Option<Layout> = args
        .layout
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    if args.stdin {
        return Ok(run_hook(args.path, layout, !args.no_journal));
    }
    let mode = match (args.fix, args.dry_run, args.restore) {
        (_, _, true) => Mode::Restore,
        (_, true, false) => Mode::DryRun,
        (true, false, false) => Mode::Fix,
        (false, false, false) => Mode::Check,
    };
    let options = Options {
        layout,
        journal: args.journal,
        into: match (args.into, args.into_same_list) {
            (Some(name), _) => Into::Named(name),
            (None, true) => Into::SameList,
            (None, false) => Into::NewList,
        },
        now: journal::now_ms(),
    };
    let report = match args.path {
        Some(p) => run::run_with(&p, false, mode, &options)?,
        None => {
            let root = env_root()
                .context("neither CLAUDE_CONFIG_DIR nor HOME is set; name the folder to check")?;
            run::run_with(&root, true, mode, &options)?
        }
    };
    if mode == Mode::Restore {
        restore_notes(&report, &options.into);
    }
    let stdout = std::io::stdout().lock();
    let view: Box<dyn Reporter> = if args.json {
        Box::new(JsonPrinter { out: stdout })
    } else {
        Box::new(TerminalReporter::new(
            stdout,
            Output::from_env(),
            args.color.color.into(),
        ))
    };
    // A closed pipe (`| head`) is not a failure of the check; any other write error is.
    let mut reporters = Reporters::new(&[], view);
    reporters.emit(&Event::CheckFinished { report: &report });
    Ok(conclude("check", reporters, Verdict::of_check(&report)))
}

/// What a user must know about where the restored tasks went, on stderr (stdout may be the
/// JSON report).
fn restore_notes(report: &run::Report, into: &Into) {
    let restored = report
        .changes
        .iter()
        .any(|c| matches!(c.repair, Repair::Restore { .. }) && c.outcome == RepairOutcome::Done);
    let in_reach = report
        .changes
        .iter()
        .any(|c| matches!(c.repair, Repair::PutInReach { .. }) && c.outcome == RepairOutcome::Done);
    if in_reach {
        eprintln!(
            "note: the tasks out of reach were written into the list their session reads now, which its next TaskList shows; the list they were in is kept as it was, and its journal records where each went (docs/check.md, \"Lists under agent teams\")."
        );
    }
    if !restored {
        return;
    }
    let note = match into {
        Into::SameList => {
            "note: the tasks went back into the list they vanished from. While they are all completed, Claude Code deletes every task of that list again about 5 s after the next task in it is completed, or after a new session opens on it (measured on 2.1.17 to 2.1.332; a running 2.1.17 also finds them itself within about 10 s). Keep a copy: `taskproof check --restore` without --into-same-list writes a new list."
        }
        _ => {
            "note: the tasks were written into a new list, as a record. A Claude Code session opened on that list (CLAUDE_CODE_TASK_LIST_ID set to its name) deletes them all again about 5 s after it starts while they are all completed, as it did to the old list (docs/check.md, \"Restore\")."
        }
    };
    eprintln!("{note}");
}

fn run_hook(list_dir: Option<PathBuf>, layout: Option<Layout>, journal: bool) -> Verdict {
    let ctx = HookContext {
        list_dir,
        config_dir: claude_config_dir(
            std::env::var_os("CLAUDE_CONFIG_DIR"),
            std::env::var_os("HOME"),
        ),
        layout,
        list_id: std::env::var("CLAUDE_CODE_TASK_LIST_ID")
            .ok()
            .filter(|s| !s.is_empty()),
        journal,
    };
    let mut input = Vec::new();
    let verdict = std::io::stdin()
        .read_to_end(&mut input)
        .map_err(hook::HookError::Read)
        .and_then(|_| hook::judge(&input, &ctx));
    match verdict {
        Ok(v) if v.blocking.is_empty() && v.notes.is_empty() => Verdict::Clean,
        // Let it through, and tell the user what they need to know: Claude Code shows the
        // `systemMessage` of a hook's JSON answer.
        Ok(v) if v.blocking.is_empty() => {
            let answer = serde_json::json!({ "systemMessage": v.notes.join(" ") });
            println!("{answer}");
            Verdict::Clean
        }
        Ok(v) => {
            eprint!("{}", render::hook_stderr(&v));
            Verdict::HookRefused
        }
        Err(e) => {
            eprintln!("taskproof check --stdin: failed to {e}");
            Verdict::HookBroken
        }
    }
}

/// Claude Code's configuration folder as Claude Code finds it: `CLAUDE_CONFIG_DIR` when it
/// is set at all (even empty: then `tasks/` is taken from the working folder, as Node's
/// `path.join("", "tasks")` does), else `~/.claude`.
fn claude_config_dir(config: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    match config {
        Some(c) => Some(PathBuf::from(c)),
        None => home
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".claude")),
    }
}
