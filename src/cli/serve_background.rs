//! `taskproof serve background`: the reference background-task runner behind the background
//! protocol on stdin/stdout (docs/background.md, "The protocol").

use super::verdict::Verdict;
use std::io::{self, BufReader};
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use taskproof_background::protocol::{PROTOCOL, serve};
use taskproof_background::runner::SEED_OUTPUT_CAP;
use taskproof_background::{BgMutant, Runner, RunnerOptions};

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  echo '{\"op\":\"hello\"}' | TASKPROOF_ROOT=/tmp/session taskproof serve background
  taskproof run --suite background --target 'bg-cmd:taskproof serve background'

Task outputs go to $TASKPROOF_ROOT/tasks/ID.output. Each task runs `sh -c COMMAND` in a process
group of its own; ending the session (`end`, or the end of stdin) kills every task still
running, and a guardian process kills them when the runner itself is SIGKILLed.")]
pub struct Args {
    /// Serve a deliberately broken runner, one rule broken (for testing harnesses).
    #[arg(long, value_name = "NAME")]
    pub mutant: Option<BgMutant>,
    /// Output bytes kept per task before the task is stopped [default: the seed's 5 GB].
    #[arg(long, value_name = "BYTES")]
    pub output_cap: Option<u64>,
    /// Run as the guardian of a runner (internal: started by the runner itself).
    #[arg(long, hide = true)]
    pub guardian: bool,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    if args.guardian {
        taskproof_background::guardian::serve(io::stdin().lock());
        return Ok(Verdict::Clean);
    }
    let root: PathBuf = std::env::var_os("TASKPROOF_ROOT")
        .map(PathBuf::from)
        .context("TASKPROOF_ROOT is not set; it names the session's folder (task outputs go to its tasks/)")?;
    let exe = std::env::current_exe().context("failed to find taskproof's own binary")?;
    let mut runner = Runner::new(
        &root,
        RunnerOptions {
            mutant: args.mutant,
            output_cap: args.output_cap,
            guardian_exe: Some(exe),
        },
    )?;
    let hello = json!({
        "ok": true,
        "protocol": PROTOCOL,
        "kind": "background",
        "name": match args.mutant {
            Some(m) => format!("taskproof-background (mutant {m})"),
            None => "taskproof-background".to_string(),
        },
        "version": env!("CARGO_PKG_VERSION"),
        "output_cap": args.output_cap.unwrap_or(SEED_OUTPUT_CAP),
        "features": ["hold"],
    });
    let stdin = BufReader::new(io::stdin().lock());
    serve(&mut runner, &hello, stdin, io::stdout().lock())?;
    Ok(Verdict::Clean)
}
