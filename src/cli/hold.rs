//! `taskproof profile hold`: the release watch. Records what a target does now (as `record` does)
//! and compares it with a recorded profile (as `profile diff` does): exit 1 with the diff,
//! per rule, when the behaviour changed (docs/bisect.md, "Release watch").

use super::verdict::Verdict;
use std::path::PathBuf;

use serde_json::json;

use super::record::observe_for;
use crate::record::{Knobs, Observed, hello_name, recorded_about};
use taskproof_profile::diff;
use taskproof_profile::recorded::{self, Recorded};

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("target", |a| a.required(true).default_value(None)),
    mut_arg("timeout", |a| a.default_value("60")),
    mut_arg("start_timeout", |a| a.default_value("120")),
)]
#[command(after_long_help = "\
Runs the scenarios the profile recorded (the built-in suite, or PATHS, less any scenario
the profile does not have) against the target as `record` does, writes what it saw as a
profile (--out), and prints `profile diff PROFILE SEEN`: the rules with changed scenarios,
then each changed step in words. A step the profile recorded as racy accepts any answer it
lists; how often a concurrent block held is never a change, only whether it always, never
or sometimes held.

Exit status: 0 when the target behaves as the profile recorded, 1 when it differs (the
diff is printed; the new recording is the file to review and check in if the change is
wanted), 2 on a usage error or a profile that cannot be read, 3 when the target could not
be installed or started, or broke the protocol.

As a scheduled CI job (.github/workflows/release-watch.yml):
  taskproof profile hold --target claude-code@latest --profile claude-code-2.1.330 --out seen.json

Examples:
  taskproof profile hold --target claude-code@latest --profile claude-code-2.1.330
  taskproof profile hold --target naive --profile hand-written-files
  taskproof profile hold --target 'cmd:python3 my_adapter.py' --profile profiles/my-store.json")]
pub struct Args {
    /// Scenario files or folders [default: the built-in suite].
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub on: super::common::TargetOpts,
    /// The recorded profile to hold the target to: a built-in name (`taskproof profile
    /// list`) or a profile file.
    #[arg(long, short)]
    pub profile: String,
    /// Where to write what the target did, as a profile [default: hold-NAME.json, NAME
    /// from the target's hello].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// How many times every scenario runs (a step answering differently is racy).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// How many times, at least, each scenario with a concurrent block runs.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    #[command(flatten)]
    pub limits: super::common::Limits,
    /// Scenarios run at once [default: as for `run`].
    #[arg(long, short, default_value_t = 0, hide_default_value = true)]
    pub jobs: usize,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let usage = |msg: String| {
        eprintln!("taskproof profile hold: {msg}");
        Ok(Verdict::Usage)
    };
    let target = match args.on.target.clone().with_mapping(args.on.mapping()) {
        Ok(t) => t,
        Err(e) => return usage(e),
    };
    let mut held: Recorded = match super::profile::load(&args.profile) {
        Ok(p) => p,
        Err(e) => return usage(format!("--profile {}: {e}", args.profile)),
    };
    let Some(all) = super::run::scenarios_or_errors(&args.paths, "hold", "nothing was run") else {
        return Ok(Verdict::Usage);
    };
    let (scenarios, unrecorded): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|s| held.scenarios.contains_key(&s.id));
    if scenarios.is_empty() {
        return usage(format!(
            "none of the scenarios to run is recorded in {}",
            held.name
        ));
    }
    let run_ids: Vec<&str> = scenarios.iter().map(|s| s.id.as_str()).collect();
    let not_run: Vec<String> = held
        .scenarios
        .keys()
        .filter(|id| !run_ids.contains(&id.as_str()))
        .cloned()
        .collect();
    held.scenarios
        .retain(|id, _| run_ids.contains(&id.as_str()));
    println!(
        "taskproof profile hold: {} held to {} ({}): {} scenario(s){}{}",
        target,
        held.name,
        held.file,
        scenarios.len(),
        if unrecorded.is_empty() {
            String::new()
        } else {
            format!(
                "; not recorded in the profile, so not run: {}",
                unrecorded
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        if not_run.is_empty() {
            String::new()
        } else {
            format!(
                "; {} recorded scenario(s) not among the scenarios given (first: {})",
                not_run.len(),
                not_run
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    let Observed {
        hello,
        raced_runs,
        observer,
        ..
    } = match observe_for(
        "hold",
        &target,
        &scenarios,
        &Knobs {
            repeat: args.repeat as usize,
            runs: args.runs as usize,
            timeout: args.limits.timeout.0,
            start_timeout: args.limits.start_timeout.0,
            jobs: args.jobs,
            start_ahead: taskproof_scenario::DEFAULT_START_AHEAD,
        },
    ) {
        Ok(o) => o,
        Err(code) => return Ok(code),
    };
    let name = hello_name(&hello.name, &hello.version);
    let mut about = recorded_about(&target, args.on.mapping(), &hello, args.repeat, raced_runs);
    about["held_to"] = json!(held.name);
    let seen = Recorded::from_runs(&name, about, observer.take());
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("hold-{name}.json")));
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return usage(format!("cannot create {}: {e}", parent.display()));
    }
    if let Err(e) = std::fs::write(&out, seen.to_text()) {
        return usage(format!("cannot write {}: {e}", out.display()));
    }
    println!("what {target} did is in {}", out.display());
    let changes = diff::diff(&held, &seen);
    let code = super::print_stdout(&diff::render(&held, &seen, &changes));
    if code != Verdict::Clean {
        return Ok(code);
    }
    let errors = seen
        .scenarios
        .values()
        .filter(|s| matches!(s.state, recorded::State::Error(_)))
        .count();
    Ok(if !changes.is_empty() {
        Verdict::Found
    } else if errors > 0 {
        Verdict::TargetBroke
    } else {
        Verdict::Clean
    })
}
