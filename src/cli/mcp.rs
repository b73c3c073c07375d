//! `taskproof serve mcp`: the strict store as an MCP server on stdio (see `docs/mcp.md`).

use super::verdict::Verdict;
use std::path::PathBuf;

use anyhow::Context;

use taskproof_core::task::ListName;
use taskproof_mcp::{Config, claude_code_root, serve_stdio};
use taskproof_store::Options;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
The root and the list are chosen as Claude Code chooses them, so that the server and Claude
Code's own task tools share one list: the root is $CLAUDE_CONFIG_DIR/tasks, else
~/.claude/tasks; the list is $CLAUDE_CODE_TASK_LIST_ID. Without a list, every tool call must
name one (argument `list`). The actor recorded in the audit log is the call's `actor`, else
$TASKPROOF_ACTOR, else the MCP client's name.

Examples:
  claude mcp add taskproof -- taskproof serve mcp
  CLAUDE_CODE_TASK_LIST_ID=team claude mcp add taskproof -- taskproof serve mcp
  taskproof serve mcp --root /tmp/tasks --list team")]
pub struct Args {
    /// The folder holding one folder per task list (default: Claude Code's, see below).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The list tool calls use when they name none (default: $CLAUDE_CODE_TASK_LIST_ID).
    #[arg(long, value_name = "NAME")]
    pub list: Option<String>,
    /// Skip fsync: writes still survive SIGKILL, but not a power cut. For tests only.
    #[arg(long, hide = true)]
    pub no_fsync: bool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let root = match args.root {
        Some(r) => r,
        None => claude_code_root(
            env("CLAUDE_CONFIG_DIR").map(PathBuf::from).as_deref(),
            std::env::home_dir().as_deref(),
        )
        .context("no task folder: give --root, or set CLAUDE_CONFIG_DIR or HOME")?,
    };
    let list = match args.list.or_else(|| env("CLAUDE_CODE_TASK_LIST_ID")) {
        None => None,
        Some(l) => Some(
            l.parse::<ListName>()
                .map_err(|e| anyhow::anyhow!("--list / CLAUDE_CODE_TASK_LIST_ID: {e}"))?,
        ),
    };
    serve_stdio(Config {
        root,
        list,
        actor: env("TASKPROOF_ACTOR"),
        options: Options {
            durable: !args.no_fsync,
        },
    })?;
    Ok(Verdict::Clean)
}
