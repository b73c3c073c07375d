//! Recording what a target does (docs/profiles.md): the whole suite run without judging,
//! every scenario several times and one with a concurrent block more often, strict's steps
//! observed ([`observe`]); the steps whose answers differed between runs (racy), probed for
//! time ([`time_probe`], [`fold_probe`]); and what a recording says of how it was made
//! ([`recorded_about`], [`hello_name`]). `taskproof profile record` writes the profile, `hold`
//! compares what it saw with one, `profile probe` probes an existing one.

use std::sync::Arc;

use serde_json::{Value, json};

use taskproof_profile::recorded::{self, Recorded, State, StepKey};
use taskproof_profile::{Mode, Observer, Profile};
use taskproof_report::result::ScenarioResult;
use taskproof_scenario::{Action, RunConfig, Scenario, run_suite};
use taskproof_targets::TargetSpec;

/// How `record` (and `hold`, which records what it sees) runs the suite.
pub struct Knobs {
    pub repeat: usize,
    pub runs: usize,
    pub timeout: std::time::Duration,
    pub start_timeout: std::time::Duration,
    pub jobs: usize,
    pub start_ahead: usize,
}

/// What a recording saw, before it is named and written.
pub struct Observed {
    pub hello: taskproof_core::protocol::Hello,
    /// How many times the scenarios with a concurrent block ran.
    pub raced_runs: usize,
    pub observer: Arc<Observer>,
    /// How the suite ran (for `record`'s time probe, which runs scenarios again so).
    pub config: RunConfig,
}

/// The target could not start, so nothing was recorded: its spec, why, and what it wrote on
/// stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotStarted {
    pub spec: String,
    pub error: String,
    pub stderr: String,
}

/// Runs `scenarios` against `target` as `record` does (every scenario `repeat` times, one
/// with a concurrent block at least `runs` times, strict's steps observed, nothing judged),
/// calling `progress(done, total, result)` after each scenario run. The caller installs the
/// target first (a download is no scenario's time).
pub fn observe(
    target: &TargetSpec,
    scenarios: &[Scenario],
    knobs: &Knobs,
    progress: &mut dyn FnMut(usize, usize, &ScenarioResult),
) -> Result<Observed, NotStarted> {
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
    let mut progress = |e: &taskproof_report::Event<'_>| {
        if let taskproof_report::Event::ScenarioFinished { result, .. } = e {
            done += 1;
            progress(done, total_runs, result);
        }
    };
    let first = run_suite(scenarios, &config, &mut progress);
    let hello = match &first.target.hello {
        Ok(h) => h.clone(),
        Err(e) => {
            return Err(NotStarted {
                spec: first.target.spec.clone(),
                error: e.clone(),
                stderr: first.target.stderr.clone(),
            });
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
pub fn racy_steps(profile: &Recorded) -> Vec<(String, usize)> {
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
pub type ProbeResult = (
    String,
    usize,
    Result<(Vec<Option<Value>>, Vec<Option<Value>>), String>,
);

/// Folds one step's time-probe answers into `profile` (time-dependent when every run after
/// the idle time answered the same), and says in words what became of the step; `true` when
/// it was folded.
pub fn fold_probe(
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
pub fn time_probe(
    scenarios: &[Scenario],
    config: &RunConfig,
    racy: &[(String, usize)],
    idle: std::time::Duration,
    runs: usize,
    progress: &mut dyn FnMut(&str),
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
                    if let taskproof_report::Event::ScenarioFinished { result, .. } = e {
                        progress(&format!(
                            "time probe {}/{runs}: {id} steps[{index}] {} ({:.1} s)",
                            run + 1,
                            if delay {
                                format!("after {} s idle", idle.as_secs_f64())
                            } else {
                                "without idle time".to_string()
                            },
                            result.elapsed.as_secs_f64()
                        ));
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

/// What a recording (`record`'s profile, `hold`'s record of what it saw) says of how it was
/// made: the target, its mapping file when it has one (an mcp: target is its command and its
/// mapping: a hold needs both), its hello, taskproof's version, the date and the repeats.
pub fn recorded_about(
    target: &TargetSpec,
    mapping: Option<&std::path::Path>,
    hello: &taskproof_core::protocol::Hello,
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

/// A profile name from a hello: `claude-code-2.1.21`, `learn-claude-code-s07`.
pub fn hello_name(name: &str, version: &str) -> String {
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
