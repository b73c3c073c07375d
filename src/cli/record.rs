//! `taskproof profile record`: run the whole suite against a target without judging it, and write
//! what it did as a recorded profile (docs/profiles.md). Every scenario runs `--repeat`
//! times, and one with a concurrent block at least `--runs` times; a step whose observation
//! differs between runs is recorded as racy, so the file does not flip between recordings.
//! Exit status: 0 when the profile was written; 3 when the target could not start (nothing
//! written) or broke the protocol in a scenario (written, the scenario recorded as an
//! error); 2 on a usage error.

use super::verdict::Verdict;
use std::path::PathBuf;

use serde_json::json;

use crate::record::{
    Knobs, NotStarted, Observed, fold_probe, hello_name, observe, racy_steps, recorded_about,
    time_probe,
};
use taskproof_profile::recorded::{self, Recorded, State};
use taskproof_scenario::Scenario;
use taskproof_targets::TargetSpec;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof profile record --target naive --out profiles/hand-written-files.json
  taskproof profile record --target claude-code@2.1.21 --out profiles/claude-code-2.1.21.json
  taskproof profile record --target 'cmd:python3 my_adapter.py' --name my-store --repeat 3 --runs 5
  taskproof profile diff profiles/claude-code-2.1.20.json profiles/claude-code-2.1.21.json

The profile lists, per scenario, the steps where the target did not do what strict expects
(the error kind it answered, or the fields the expectation checks as it answered them), and
every concurrent block with how often it held. Every scenario runs --repeat times (default
2); a step that answered differently between those runs is recorded as racy, with every
answer seen, and `run --profile` accepts any of them there. A store whose behaviour depends
on timing (Claude Code clears a list 5 s after its last task is completed) needs this, or
its recording flips from one day to the next. Each racy step is then probed for time
(--time-probe, 7 s): its scenario runs again with that much idle time before the step, and
if every probe run gives one of the answers seen, the step is recorded as time-dependent
(`timed`: that answer after the idle time, the others sooner), a state of its own in
`profile diff`, `run --profile` and the matrix. Review the file, check it in, and hold the
next release to it with `taskproof run --profile FILE`.

Exit status: 0 when the profile was written, 2 on a usage error, 3 when the target could
not start (nothing is written) or broke the protocol in a scenario (the profile is written,
with that scenario recorded as an error).")]
pub struct Args {
    /// Scenario files or folders [default: the built-in suite].
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub on: super::common::TargetOpts,
    /// Where to write the profile [default: profiles/NAME.json].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The profile's name [default: the --out file's stem, else the target's hello name
    /// and version].
    #[arg(long)]
    pub name: Option<String>,
    /// How many times every scenario runs; a step whose answer differs between runs is
    /// recorded as racy (accepted either way by `run --profile`). 1 records each step once,
    /// as it happened to go.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// How many times, at least, each scenario with a concurrent block runs (how often the
    /// block held is recorded).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    #[command(flatten)]
    pub limits: super::common::Limits,
    /// Scenarios run at once [default: as for `run`].
    #[arg(long, short, default_value_t = 0, hide_default_value = true)]
    pub jobs: usize,
    /// Scenarios prepared ahead (as for `run`).
    #[arg(long, value_name = "N", default_value_t = taskproof_scenario::DEFAULT_START_AHEAD)]
    pub start_ahead: usize,
    /// The time probe: each step that answered differently between runs is run again
    /// --repeat times (at least 2) with SECS seconds of idle time before it, sessions open
    /// and nothing sent; if every one of those runs answers the same, one of the answers
    /// seen, the step is recorded as time-dependent (`timed`: that answer after SECS s, the
    /// others sooner) instead of racy. 0 turns it off.
    #[arg(long, value_name = "SECS", default_value = "7", value_parser = super::race::settle_seconds)]
    pub time_probe: f64,
}

/// A profile name: what `--profile` and file names can carry.
pub(crate) fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._".contains(&b))
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    let target = args
        .on
        .target
        .clone()
        .with_mapping(args.on.mapping())
        .map_err(anyhow::Error::msg)?;
    let usage = |msg: String| {
        eprintln!("taskproof profile record: {msg}");
        Ok(Verdict::Usage)
    };
    let Some(scenarios) =
        super::run::scenarios_or_errors(&args.paths, "record", "nothing was recorded")
    else {
        return Ok(Verdict::Usage);
    };
    let from_out = args
        .out
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    if let Some(n) = args.name.as_ref().or(from_out.as_ref())
        && !valid_name(n)
    {
        return usage(format!(
            "profile name {n:?}: use lower-case letters, digits, '-', '.' and '_'"
        ));
    }
    let observed = match observe_for(
        "record",
        &target,
        &scenarios,
        &Knobs {
            repeat: args.repeat as usize,
            runs: args.runs as usize,
            timeout: args.limits.timeout.0,
            start_timeout: args.limits.start_timeout.0,
            jobs: args.jobs,
            start_ahead: args.start_ahead,
        },
    ) {
        Ok(o) => o,
        Err(code) => return Ok(code),
    };
    let Observed {
        hello,
        raced_runs,
        observer,
        config,
    } = observed;
    let runs = observer.take();
    let probe = std::time::Duration::from_secs_f64(args.time_probe);
    let racy = racy_steps(&Recorded::from_runs("probe", json!({}), runs.clone()));
    let probed = if probe.is_zero() {
        Vec::new()
    } else {
        time_probe(
            &scenarios,
            &config,
            &racy,
            probe,
            (args.repeat as usize).max(2),
            &mut |line| eprintln!("taskproof profile record: {line}"),
        )
    };
    let name = args
        .name
        .or(from_out)
        .unwrap_or_else(|| hello_name(&hello.name, &hello.version));
    let mut about = recorded_about(&target, args.on.mapping(), &hello, args.repeat, raced_runs);
    about["time_probe_seconds"] = json!(args.time_probe);
    let mut profile = Recorded::from_runs(&name, about, runs);
    for result in &probed {
        let (_, words) = fold_probe(&mut profile, result, probe);
        let (id, index, _) = result;
        eprintln!("taskproof profile record: time probe of {id} steps[{index}]: {words}");
    }

    let out = args.out.unwrap_or_else(|| recorded::default_path(&name));
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return usage(format!("cannot create {}: {e}", parent.display()));
    }
    if let Err(e) = std::fs::write(&out, profile.to_text()) {
        return usage(format!("cannot write {}: {e}", out.display()));
    }
    let (mut strict, mut differ, mut skipped, mut errors) = (0, 0, 0, 0);
    let (mut racy, mut timed) = (0, 0);
    for s in profile.scenarios.values() {
        match &s.state {
            State::Skipped(_) => skipped += 1,
            State::Error(_) => errors += 1,
            State::Ran if s.as_strict() => strict += 1,
            State::Ran => differ += 1,
        }
        for r in s.steps.values() {
            match r.seen {
                recorded::Seen::Racy(_) => racy += 1,
                recorded::Seen::Timed { .. } => timed += 1,
                recorded::Seen::Same(_) => {}
            }
        }
    }
    println!(
        "recorded {} scenarios against {} into {} (profile {name}): {strict} as strict expects, {differ} differ, {skipped} skipped, {errors} errors; {racy} racy steps, {timed} time-dependent",
        profile.scenarios.len(),
        target,
        out.display()
    );
    if errors > 0 {
        eprintln!(
            "taskproof profile record: the target broke the protocol in {errors} scenario(s); they are recorded as errors"
        );
        return Ok(Verdict::TargetBroke);
    }
    Ok(Verdict::Clean)
}

/// [`observe`] for command `command`: the target installed first, progress on stderr as
/// `taskproof COMMAND: [i/n] ID`, and a target that could not be installed or started said
/// there; `Err` is then the exit status.
pub(super) fn observe_for(
    command: &str,
    target: &TargetSpec,
    scenarios: &[Scenario],
    knobs: &Knobs,
) -> Result<Observed, Verdict> {
    if let Some(code) = super::prepare_target(target) {
        return Err(code);
    }
    observe(target, scenarios, knobs, &mut |done, total, result| {
        eprintln!(
            "taskproof {command}: [{done}/{total}] {} ({:.1} s)",
            result.id,
            result.elapsed.as_secs_f64()
        );
    })
    .map_err(|NotStarted { spec, error, stderr }| {
        eprintln!("taskproof {command}: the target {spec} could not start, so nothing was recorded: {error}");
        if !stderr.trim().is_empty() {
            eprintln!("{}", stderr.trim_end());
        }
        Verdict::TargetBroke
    })
}
