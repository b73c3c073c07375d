//! `taskproof serve log LIST`: a list's audit log, one change per line (see `docs/audit.md`).

use super::verdict::Verdict;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::Value;

use taskproof_core::task::ListName;
use taskproof_store::audit::{AUDIT_NAME, Record, read_log};

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
The root is chosen as `taskproof serve mcp` chooses it: --root, else $CLAUDE_CONFIG_DIR/tasks, else
~/.claude/tasks. Each line shows when, who, which operation, and per task what changed
(field: before -> after). --json prints the records as stored.

Examples:
  taskproof serve log team
  taskproof serve log team --task 3 --actor agent-a
  taskproof serve log team --root /srv/tasks --json")]
pub struct Args {
    /// The list whose log to show.
    pub list: String,
    /// The folder holding one folder per list.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Only changes to this task.
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Only changes by this actor.
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
    /// Print the matching records as JSON lines.
    #[arg(long)]
    pub json: bool,
}

fn short(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "(none)".into(),
        Some(v) => v.to_string(),
    }
}

/// What changed in one task, in words.
fn describe(id: &str, before: &Value, after: &Value) -> String {
    match (before, after) {
        (Value::Null, Value::Null) => format!("task {id}: unchanged"),
        (Value::Null, a) => format!("task {id} created: {}", short(a.get("subject"))),
        (_, Value::Null) => format!("task {id} deleted"),
        (b, a) => {
            let mut keys: Vec<&String> = b
                .as_object()
                .into_iter()
                .flat_map(|m| m.keys())
                .chain(a.as_object().into_iter().flat_map(|m| m.keys()))
                .collect();
            keys.sort();
            keys.dedup();
            let diffs: Vec<String> = keys
                .into_iter()
                .filter(|k| b.get(k.as_str()) != a.get(k.as_str()))
                .map(|k| {
                    format!(
                        "{k}: {} -> {}",
                        short(b.get(k.as_str())),
                        short(a.get(k.as_str()))
                    )
                })
                .collect();
            format!("task {id}: {}", diffs.join(", "))
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let list: ListName = args
        .list
        .parse()
        .map_err(|e| anyhow::anyhow!("LIST: {e}"))?;
    let root = match args.root {
        Some(r) => r,
        None => taskproof_mcp::claude_code_root(
            std::env::var_os("CLAUDE_CONFIG_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .as_deref(),
            std::env::home_dir().as_deref(),
        )
        .context("no task folder: give --root, or set CLAUDE_CONFIG_DIR or HOME")?,
    };
    let path = root.join(list.as_str()).join(AUDIT_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!(
                "{}: no audit log; a list gets one when `taskproof serve mcp` first changes it",
                path.display()
            )
        }
        Err(e) => return Err(e).with_context(|| format!("failed to read {}", path.display())),
    };
    let (records, problems) = read_log(&bytes);
    for (line, what) in &problems {
        eprintln!("taskproof: {}:{line}: {what}", path.display());
    }
    let keep = |r: &Record| -> bool {
        args.actor.as_deref().is_none_or(|a| r.str("actor") == a)
            && args
                .task
                .as_deref()
                .is_none_or(|t| r.changes().iter().any(|(id, _, _)| id == t))
    };
    let mut out = String::new();
    for r in records.iter().filter(|r| keep(r)) {
        if args.json {
            out.push_str(&Value::Object(r.value.clone()).to_string());
            out.push('\n');
            continue;
        }
        let changes: Vec<String> = r
            .changes()
            .iter()
            .filter(|(id, _, _)| args.task.as_deref().is_none_or(|t| t == id))
            .map(|(id, b, a)| describe(id, b, a))
            .collect();
        out.push_str(&format!(
            "{}  {}  {}  {}\n",
            r.str("time"),
            r.str("actor"),
            r.str("op"),
            changes.join("; ")
        ));
    }
    let code = super::print_stdout(&out);
    if code == Verdict::Clean && !problems.is_empty() {
        return Ok(Verdict::Found);
    }
    Ok(code)
}
