//! `taskproof race background`: the kill/complete race against a background-task target
//! (crates/background/src/race.rs, docs/background.md "The race").

use std::path::PathBuf;

use super::Seconds;
use super::verdict::Verdict;
use taskproof_background::race::{BgRaceConfig, race};
use taskproof_background::{BgOpen, BgTarget};
use taskproof_model::model_log::LogHandle;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
N tasks each run `sleep SECS; exit 0`; task i is killed SECS + (i - N/2) x STEP seconds after
its start, so that the kills sweep across the moment the tasks complete. Then every task id is
accounted for: notified once, twice or more, never, or once with a status its kill's answer
contradicts (a kill that answered `killed` must be notified killed; one that answered `already
final: completed` must be notified completed). The process table is checked after the end.

Exit status: 0 when every task was notified exactly once, as its kill answered, and no task
process outlived the session; 1 otherwise; 2 on usage errors; 3 when the target could not
start or broke the protocol.

Examples:
  taskproof race background --tasks 100
  taskproof race background --target mutant:double-notify --report md:race.md
  taskproof race background --target 'bg-cmd:python3 examples/adapters/background/runner.py'")]
pub struct Args {
    /// The background-task target: reference, mutant:NAME, in-process:reference or
    /// bg-cmd:COMMAND (docs/background.md).
    #[arg(long, default_value = "reference")]
    pub target: BgTarget,
    /// How many tasks.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub tasks: u16,
    /// Seconds each task sleeps before it exits 0.
    #[arg(long, value_name = "SECS", default_value = "2")]
    pub sleep: Seconds,
    /// Seconds between the kill offsets of consecutive tasks.
    #[arg(long, value_name = "SECS", default_value = "0.001")]
    pub step: f64,
    #[command(flatten)]
    pub limits: super::common::Limits,
    /// Also write a report: json:PATH or md:PATH (repeatable).
    #[arg(long, value_name = "KIND:PATH")]
    pub report: Vec<String>,
    /// With claude-code@VERSION, keep the scripted model's own log in FILE: every request
    /// the CLI sent and every answer, one JSON line each (docs/claude-code.md, "The model's
    /// log").
    #[arg(long, value_name = "FILE")]
    pub model_log: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    if !(args.step.is_finite() && args.step >= 0.0) {
        eprintln!("taskproof race background: --step must be 0 or more seconds");
        return Ok(Verdict::Usage);
    }
    let mut reports: Vec<(bool, PathBuf)> = Vec::new();
    for r in &args.report {
        match r.split_once(':') {
            Some(("json", p)) if !p.is_empty() => reports.push((true, PathBuf::from(p))),
            Some(("md", p)) if !p.is_empty() => reports.push((false, PathBuf::from(p))),
            _ => {
                eprintln!(
                    "taskproof race background: --report {r:?}: expected json:PATH or md:PATH"
                );
                return Ok(Verdict::Usage);
            }
        }
    }
    let model_log = args
        .model_log
        .clone()
        .map(|path| LogHandle::new(path, &args.target.to_string(), "race-background"));
    let config = BgRaceConfig {
        target: args.target,
        open: BgOpen {
            limits: taskproof_background::protocol::Limits {
                timeout: args.limits.timeout.0,
                start_timeout: args.limits.start_timeout.0,
            },
            output_cap: None,
            model_log,
        },
        tasks: usize::from(args.tasks),
        sleep: args.sleep.0.as_secs_f64(),
        step: args.step,
    };
    let report = match race(&config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "taskproof race background: the target {} failed: {e:#}",
                config.target
            );
            return Ok(Verdict::TargetBroke);
        }
    };
    let md = report.markdown();
    for (json, path) in &reports {
        let bytes = if *json {
            serde_json::to_string_pretty(&report)? + "\n"
        } else {
            md.clone()
        };
        if let Err(e) = taskproof_report::events::write_report(path, bytes.as_bytes()) {
            eprintln!("taskproof race background: {e}");
            return Ok(Verdict::Usage);
        }
    }
    let summary = md.lines().find(|l| l.starts_with("**")).unwrap_or("");
    let code = super::print_stdout(&format!("{}\n", summary.replace("**", "")));
    if code != Verdict::Clean {
        return Ok(code);
    }
    Ok(Verdict::of_bg_race(&report))
}
