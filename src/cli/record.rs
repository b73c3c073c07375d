//! `taskproof record`: run the whole suite against a target without judging it, and write
//! what it did as a recorded profile (docs/profiles.md). Every scenario runs `--repeat`
//! times, and one with a concurrent block at least `--runs` times; a step whose observation
//! differs between runs is recorded as racy, so the file does not flip between recordings.
//! Exit status: 0 when the profile was written; 3 when the target could not start (nothing
//! written) or broke the protocol in a scenario (written, the scenario recorded as an
//! error); 2 on a usage error.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use super::Seconds;
use super::exit;
use crate::profile::recorded::{self, Recorded, State, StepKey};
use crate::profile::{Mode, Observer, Profile};
use crate::scenario::{Action, RunConfig, Scenario, run_suite};
use crate::target::TargetSpec;

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Examples:
  taskproof record --target naive --out profiles/hand-written-files.json
  taskproof record --target claude-code@2.1.21 --out profiles/claude-code-2.1.21.json
  taskproof record --target 'cmd:python3 my_adapter.py' --name my-store --repeat 3 --runs 5
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
    /// The store to record: reference, naive, mutant:NAME, cmd:COMMAND, mcp:COMMAND
    /// (with --mapping) or claude-code@VERSION.
    #[arg(long, short, default_value = "reference")]
    pub target: TargetSpec,
    /// The mapping file of an mcp:COMMAND target (docs/mcp-targets.md; `taskproof
    /// mcp-draft COMMAND` writes a draft).
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<std::path::PathBuf>,
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
    /// Seconds a request may go unanswered before the target is judged hung.
    #[arg(long, value_name = "SECS", default_value = "10")]
    pub timeout: Seconds,
    /// Seconds a session may take to start and answer hello.
    #[arg(long, value_name = "SECS", default_value = "60")]
    pub start_timeout: Seconds,
    /// Scenarios run at once [default: as for `run`].
    #[arg(long, short, default_value_t = 0, hide_default_value = true)]
    pub jobs: usize,
    /// Scenarios prepared ahead (as for `run`).
    #[arg(long, value_name = "N", default_value_t = crate::scenario::DEFAULT_START_AHEAD)]
    pub start_ahead: usize,
    /// The time probe: each step that answered differently between runs is run again
    /// --repeat times (at least 2) with SECS seconds of idle time before it, sessions open
    /// and nothing sent; if every one of those runs answers the same, one of the answers
    /// seen, the step is recorded as time-dependent (`timed`: that answer after SECS s, the
    /// others sooner) instead of racy. 0 turns it off.
    #[arg(long, value_name = "SECS", default_value = "7", value_parser = super::race::settle_seconds)]
    pub time_probe: f64,
}

/// How `record` (and `hold`, which records what it sees) runs the suite.
pub(crate) struct Knobs {
    pub repeat: usize,
    pub runs: usize,
    pub timeout: std::time::Duration,
    pub start_timeout: std::time::Duration,
    pub jobs: usize,
    pub start_ahead: usize,
}

/// What a recording saw, before it is named and written.
pub(crate) struct Observed {
    pub hello: crate::protocol::Hello,
    /// How many times the scenarios with a concurrent block ran.
    pub raced_runs: usize,
    pub observer: Arc<Observer>,
    /// How the suite ran (for `record`'s time probe, which runs scenarios again so).
    pub config: RunConfig,
}

/// Runs `scenarios` against `target` as `record` does (every scenario `repeat` times, one
/// with a concurrent block at least `runs` times, strict's steps observed, nothing judged),
/// with progress on stderr as `taskproof COMMAND: [i/n] ID`. The target is installed first.
/// `Err` is the exit status when the target could not be made ready or started (said on
/// stderr).
pub(crate) fn observe(
    target: &TargetSpec,
    scenarios: &[Scenario],
    knobs: &Knobs,
    command: &str,
) -> Result<Observed, i32> {
    if let Some(code) = super::prepare_target(target) {
        return Err(code);
    }
    let observer = Arc::new(Observer::default());
    let config = RunConfig {
        profile: Profile::Strict,
        mode: Mode::Record(observer.clone()),
        timeout: knobs.timeout,
        start_timeout: knobs.start_timeout,
        jobs: knobs.jobs,
        start_ahead: knobs.start_ahead,
        ..RunConfig::new(target.clone())
    };
    let raced: Vec<Scenario> = scenarios
        .iter()
        .filter(|s| {
            s.steps_for(Profile::Strict)
                .any(|st| matches!(st.action, Action::Concurrent(_)))
        })
        .cloned()
        .collect();
    let repeat = knobs.repeat;
    let raced_runs = repeat.max(knobs.runs);
    let total_runs = scenarios.len() * repeat + raced.len() * (raced_runs - repeat);
    let mut done = 0usize;
    let mut progress = |e: &crate::report::Event<'_>| {
        if let crate::report::Event::ScenarioFinished { result, .. } = e {
            done += 1;
            eprintln!(
                "taskproof {command}: [{done}/{total_runs}] {} ({:.1} s)",
                result.id,
                result.elapsed.as_secs_f64()
            );
        }
    };
    let first = run_suite(scenarios, &config, &mut progress);
    let hello = match &first.target.hello {
        Ok(h) => h.clone(),
        Err(e) => {
            eprintln!(
                "taskproof {command}: the target {} could not start, so nothing was recorded: {e}",
                first.target.spec
            );
            if !first.target.stderr.trim().is_empty() {
                eprintln!("{}", first.target.stderr.trim_end());
            }
            return Err(exit::TARGET);
        }
    };
    for _ in 1..repeat {
        run_suite(scenarios, &config, &mut progress);
    }
    for _ in repeat..raced_runs {
        if !raced.is_empty() {
            run_suite(&raced, &config, &mut progress);
        }
    }
    Ok(Observed {
        hello,
        raced_runs,
        observer,
        config,
    })
}

/// The steps (not concurrent blocks) recorded as racy: (scenario id, step index).
pub(super) fn racy_steps(profile: &Recorded) -> Vec<(String, usize)> {
    profile
        .scenarios
        .iter()
        .flat_map(|(id, s)| {
            s.steps.iter().filter_map(move |(k, r)| match (k, &r.seen) {
                (StepKey::Step(i), recorded::Seen::Racy(_)) => Some((id.clone(), *i)),
                _ => None,
            })
        })
        .collect()
}

/// What the time probe saw at one racy step (`None`: as strict): the runs with the idle
/// time before the step and the runs without, or why it has no answer.
pub(super) type ProbeResult = (
    String,
    usize,
    Result<(Vec<Option<Value>>, Vec<Option<Value>>), String>,
);

/// Folds one step's time-probe answers into `profile` (time-dependent when every run after
/// the idle time answered the same), and says in words what became of the step; `true` when
/// it was folded.
pub(super) fn fold_probe(
    profile: &mut Recorded,
    (id, index, seen): &ProbeResult,
    idle: std::time::Duration,
) -> (bool, String) {
    let folded = seen
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|(with, without)| profile.time_dependent(id, *index, idle, with, without));
    match folded {
        Ok(late) => (
            true,
            format!("time-dependent: every run answered {late} after the idle time"),
        ),
        Err(why) => (false, format!("left racy: {why}")),
    }
}

/// Runs each racy step's scenario `runs` times with `idle` before that step and `runs`
/// times without, interleaved, one racy step at a time (so that no
/// probe's wait moves another step). Only that step's answers are kept: after the idle
/// time the later steps may well answer otherwise, which says nothing about them.
pub(super) fn time_probe(
    scenarios: &[Scenario],
    config: &RunConfig,
    racy: &[(String, usize)],
    idle: std::time::Duration,
    runs: usize,
) -> Vec<ProbeResult> {
    let mut out = Vec::new();
    for (id, index) in racy {
        let Some(s) = scenarios.iter().find(|s| &s.id == id) else {
            continue;
        };
        let (with, without) = (Arc::new(Observer::default()), Arc::new(Observer::default()));
        let probe = |observer: &Arc<Observer>, delay: bool| RunConfig {
            mode: Mode::Record(observer.clone()),
            delays: if delay {
                [((id.clone(), *index), idle)].into_iter().collect()
            } else {
                Default::default()
            },
            ..config.clone()
        };
        for run in 0..runs {
            // In the order with, without, without, with, … so that a store whose answers
            // alternate from one session to the next cannot pass for one that depends on
            // time: its runs with the idle time would differ.
            let order = if run % 2 == 0 {
                [(&with, true), (&without, false)]
            } else {
                [(&without, false), (&with, true)]
            };
            for (observer, delay) in order {
                run_suite(std::slice::from_ref(s), &probe(observer, delay), &mut |e| {
                    if let crate::report::Event::ScenarioFinished { result, .. } = e {
                        eprintln!(
                            "taskproof record: time probe {}/{runs}: {id} steps[{index}] {} ({:.1} s)",
                            run + 1,
                            if delay {
                                format!("after {} s idle", idle.as_secs_f64())
                            } else {
                                "without idle time".to_string()
                            },
                            result.elapsed.as_secs_f64()
                        );
                    }
                });
            }
        }
        // A run that stopped before the step (a target error) has no answer there.
        let answers = |observer: &Arc<Observer>| {
            observer
                .take()
                .iter()
                .map(|r| {
                    r.steps
                        .get(&StepKey::Step(*index))
                        .map(|(_, _, obs)| obs.clone())
                        .ok_or_else(|| match &r.state {
                            State::Error(e) => format!("a probe run ended before the step: {e}"),
                            State::Skipped(why) => format!("a probe run was skipped: {why}"),
                            State::Ran => "a probe run did not reach the step".to_string(),
                        })
                })
                .collect::<Result<Vec<_>, String>>()
        };
        let seen = answers(&with).and_then(|w| answers(&without).map(|wo| (w, wo)));
        out.push((id.clone(), *index, seen));
    }
    out
}

/// A profile name: what `--profile` and file names can carry.
pub(crate) fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._".contains(&b))
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut args = args;
    args.target = args
        .target
        .with_mapping(args.mapping.as_deref())
        .map_err(anyhow::Error::msg)?;
    let usage = |msg: String| {
        eprintln!("taskproof record: {msg}");
        Ok(exit::USAGE)
    };
    let Some(scenarios) =
        super::run::scenarios_or_errors(&args.paths, "record", "nothing was recorded")
    else {
        return Ok(exit::USAGE);
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
    let observed = match observe(
        &args.target,
        &scenarios,
        &Knobs {
            repeat: args.repeat as usize,
            runs: args.runs as usize,
            timeout: args.timeout.0,
            start_timeout: args.start_timeout.0,
            jobs: args.jobs,
            start_ahead: args.start_ahead,
        },
        "record",
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
        )
    };
    let name = args
        .name
        .or(from_out)
        .unwrap_or_else(|| hello_name(&hello.name, &hello.version));
    let mut about = recorded_about(
        &args.target,
        args.mapping.as_deref(),
        &hello,
        args.repeat,
        raced_runs,
    );
    about["time_probe_seconds"] = json!(args.time_probe);
    let mut profile = Recorded::from_runs(&name, about, runs);
    for result in &probed {
        let (_, words) = fold_probe(&mut profile, result, probe);
        let (id, index, _) = result;
        eprintln!("taskproof record: time probe of {id} steps[{index}]: {words}");
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
        args.target,
        out.display()
    );
    if errors > 0 {
        eprintln!(
            "taskproof record: the target broke the protocol in {errors} scenario(s); they are recorded as errors"
        );
        return Ok(exit::TARGET);
    }
    Ok(exit::OK)
}

/// A profile name from a hello: `claude-code-2.1.21`, `learn-claude-code-s07`.
/// What a recording (`record`'s profile, `hold`'s record of what it saw) says of how it was
/// made: the target, its mapping file when it has one (an mcp: target is its command and its
/// mapping: a hold needs both), its hello, taskproof's version, the date and the repeats.
pub(crate) fn recorded_about(
    target: &TargetSpec,
    mapping: Option<&std::path::Path>,
    hello: &crate::protocol::Hello,
    repeat: u32,
    raced_runs: usize,
) -> Value {
    let mut about = json!({
        "target": target.to_string(),
        "hello": {
            "name": hello.name,
            "version": hello.version,
            "layout": hello.layout.as_str(),
            "features": hello.features.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
        },
        "taskproof": env!("CARGO_PKG_VERSION"),
        "date": recorded::today(),
        "repeat": repeat,
        "runs": raced_runs,
    });
    if let Some(m) = mapping {
        about["mapping"] = json!(m.display().to_string());
    }
    about
}

pub(crate) fn hello_name(name: &str, version: &str) -> String {
    let raw = if version.is_empty() || version.starts_with("git:") {
        name.to_string()
    } else {
        format!("{name}-{version}")
    };
    raw.to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}
