//! Running one version: what `bisect` compares between versions, made from the same
//! machinery `run` and `race` use, called in-process.
//!
//! In-process rather than a `taskproof run` subprocess per version: the results come back
//! as [`ScenarioResult`]s and race reports, with their witnesses, instead of being parsed
//! back from a JSON report, and a bad scenario id or step is found once, before anything is
//! installed. Every Claude Code session is still its own process group, killed when its
//! scenario ends, as under `run`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::search::{Judged, Seen};
use taskproof_profile::{Mode, Profile};
use taskproof_race::{AnomalyKind, Workload};
use taskproof_report::result::{Outcome, ScenarioResult};
use taskproof_reporters::terminal::failure_text;
use taskproof_scenario::{Action, RunConfig, Scenario, run_suite};
use taskproof_targets::TargetSpec;

/// What counts as the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Change {
    /// The scenario's verdict (pass, fail, skip), or the step's with --step.
    Verdict,
    /// The target's answers: every judged request's, or the step's with --step.
    Answer,
    /// Whether a race finds the anomaly at all (its count above zero).
    Anomaly,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Verdict => "verdict",
            Change::Answer => "answer",
            Change::Anomaly => "anomaly",
        }
    }
}

/// Time limits of a version's sessions.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub start_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: taskproof_session::DEFAULT_TIMEOUT,
            start_timeout: taskproof_session::DEFAULT_START_TIMEOUT,
        }
    }
}

/// One rule of one background-task scenario (`run --suite background`): `fail` when a
/// failure cites the rule, else the scenario's `pass` or `skip`.
#[derive(Debug, Clone)]
pub struct BackgroundProbe {
    pub scenario: taskproof_background::scenario::BgScenario,
    pub rule: taskproof_core::rule::Rule,
    pub limits: Limits,
}

impl BackgroundProbe {
    /// Runs the scenario once against the background tasks of `target` (a `claude-code@V`
    /// target: its CLI, installed first when needed).
    pub fn judge(&self, target: &TargetSpec) -> Judged {
        use taskproof_background::suite::{BgConfig, run_scenario};
        use taskproof_background::{BgOpen, BgTarget};
        let bg: BgTarget = match target.to_string().parse() {
            Ok(t) => t,
            Err(e) => return Judged::Unusable(format!("no background-task target: {e}")),
        };
        if let Err(e) = target.prepare() {
            return Judged::Unusable(format!("cannot be installed: {e}"));
        }
        let config = BgConfig {
            target: bg,
            open: BgOpen {
                limits: taskproof_background::protocol::Limits {
                    timeout: self.limits.timeout,
                    start_timeout: self.limits.start_timeout,
                },
                output_cap: None,
                model_log: None,
            },
            model_log: None,
        };
        let r = run_scenario(&self.scenario, &config);
        if let Err(e) = &r.result
            && e.message.starts_with("failed to open a session")
        {
            return Judged::Unusable(format!("cannot be started: {}", e.message));
        }
        let broke: Vec<&taskproof_report::result::StepFailure> = r
            .failures()
            .iter()
            .filter(|f| f.rules.contains(&self.rule))
            .collect();
        let (key, summary, witness) = match (&r.result, broke.first()) {
            (Err(e), _) => {
                let at = e.step.map(|i| format!("steps[{i}]: ")).unwrap_or_default();
                return Judged::Unusable(format!("the target broke at {at}{}", e.message));
            }
            (_, Some(first)) => (
                "fail".to_string(),
                format!("fail ({}: {})", self.rule, first.reason),
                broke
                    .iter()
                    .map(|f| f.reason.clone())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            (Ok(Outcome::Skip(why)), None) => {
                ("skip".into(), format!("skip ({why})"), String::new())
            }
            (Ok(_), None) => (
                "pass".into(),
                format!("pass ({} held)", self.rule),
                String::new(),
            ),
        };
        Judged::Seen(Seen {
            key,
            summary,
            witness,
            failed_steps: broke.iter().filter_map(|f| f.step).collect(),
            answers: BTreeMap::new(),
        })
    }
}

/// One scenario (optionally one step of it), judged by `strict`'s expectations.
#[derive(Debug, Clone)]
pub struct ScenarioProbe {
    pub scenario: Scenario,
    pub step: Option<usize>,
    pub change: Change,
    pub limits: Limits,
}

impl ScenarioProbe {
    /// Checks the step before anything runs: it must be a request (`send`) step that runs
    /// under strict.
    pub fn new(
        scenario: Scenario,
        step: Option<usize>,
        change: Change,
        limits: Limits,
    ) -> Result<ScenarioProbe, String> {
        if change == Change::Anomaly {
            return Err("--change anomaly is for races (--workload W --anomaly KIND)".into());
        }
        if let Some(n) = step {
            let sends: Vec<usize> = scenario
                .steps_for(Profile::Strict)
                .filter(|s| matches!(s.action, Action::Send { .. }))
                .map(|s| s.index)
                .collect();
            if !sends.contains(&n) {
                return Err(format!(
                    "--step {n}: {} has no request at steps[{n}]; its requests are steps {}",
                    scenario.id,
                    sends
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Ok(ScenarioProbe {
            scenario,
            step,
            change,
            limits,
        })
    }

    /// Runs the scenario once against `target` (installing it first when needed).
    pub fn judge(&self, target: &TargetSpec) -> Judged {
        if let Err(e) = target.prepare() {
            return Judged::Unusable(format!("cannot be installed: {e}"));
        }
        let config = RunConfig {
            profile: Profile::Strict,
            mode: Mode::Expectations,
            timeout: self.limits.timeout,
            start_timeout: self.limits.start_timeout,
            // A step's verdict or the answers need every step run, not the first failure.
            keep_going: self.step.is_some() || self.change == Change::Answer,
            start_ahead: 0,
            jobs: 1,
            ..RunConfig::new(target.clone())
        };
        let suite = run_suite(std::slice::from_ref(&self.scenario), &config, &mut |_| {});
        if let Err(e) = &suite.target.hello {
            return Judged::Unusable(format!("cannot be started: {e}"));
        }
        match suite.scenarios.into_iter().next() {
            Some(r) => self.seen(&r),
            None => Judged::Unusable("the run returned no result".into()),
        }
    }

    /// What one result says, for the change looked for.
    pub fn seen(&self, r: &ScenarioResult) -> Judged {
        judged_result(r, self.change, self.step)
    }
}

/// What one scenario result says for `change` (of step `step`, or the whole scenario).
fn judged_result(r: &ScenarioResult, change: Change, step: Option<usize>) -> Judged {
    if let Err(e) = &r.result {
        // A target that hung, crashed or broke the protocol judged nothing.
        let at = e.step.map(|i| format!("steps[{i}]: ")).unwrap_or_default();
        return Judged::Unusable(format!("the target broke at {at}{}", e.message));
    }
    let answers: BTreeMap<usize, String> = r
        .steps
        .iter()
        .map(|s| (s.step, s.answer.json.to_string()))
        .collect();
    let failed_steps: Vec<usize> = r.failures().iter().filter_map(|f| f.step).collect();
    let witness = match &r.result {
        Ok(Outcome::Fail(_)) => failure_text(r),
        Ok(Outcome::Skip(why)) => format!("skipped: {why}"),
        _ => match step {
            Some(n) => answers
                .get(&n)
                .map(|a| format!("steps[{n}] answered {a}"))
                .unwrap_or_default(),
            None => String::new(),
        },
    };
    let (key, summary) = match (change, step) {
        (Change::Answer, None) => {
            let all: Vec<Value> = r
                .steps
                .iter()
                .map(|s| serde_json::json!({"step": s.step, "answer": s.answer.json}))
                .collect();
            let key = Value::Array(all).to_string();
            let summary = format!("{} answers ({})", r.steps.len(), r.kind().as_str());
            (key, summary)
        }
        (Change::Answer, Some(n)) => match answers.get(&n) {
            Some(a) => (a.clone(), format!("steps[{n}] answered {a}")),
            None => (
                format!("no answer: {}", r.kind().as_str()),
                format!("steps[{n}] not reached ({})", r.kind().as_str()),
            ),
        },
        (_, Some(n)) => {
            let verdict = match &r.result {
                Ok(Outcome::Skip(_)) => "skip",
                _ if failed_steps.contains(&n) => "fail",
                _ if answers.contains_key(&n) => "pass",
                _ => "not reached",
            };
            (verdict.to_string(), format!("steps[{n}] {verdict}"))
        }
        (_, None) => {
            let kind = r.kind().as_str().to_string();
            let summary = match r.reason() {
                Some(why) => format!("{kind} ({why})"),
                None => kind.clone(),
            };
            (kind, summary)
        }
    };
    Judged::Seen(Seen {
        key,
        summary,
        witness,
        failed_steps,
        answers,
    })
}

/// A race: whether one workload finds an anomaly.
#[derive(Debug, Clone)]
pub struct RaceProbe {
    pub workload: Workload,
    pub anomaly: AnomalyKind,
    pub writers: usize,
    pub ops: usize,
    pub seed: u64,
    pub limits: Limits,
}

/// `lost`, `duplicate_ids`, ... (the race report's names).
pub fn parse_anomaly(s: &str) -> Result<AnomalyKind, String> {
    AnomalyKind::ALL
        .into_iter()
        .find(|k| k.name() == s)
        .ok_or_else(|| {
            format!(
                "unknown anomaly {s:?}; expected one of {}",
                AnomalyKind::ALL.map(|k| k.name()).join(", ")
            )
        })
}

impl RaceProbe {
    /// Runs the race once against `target`.
    pub fn judge(&self, target: &TargetSpec) -> Judged {
        if let Err(e) = target.prepare() {
            return Judged::Unusable(format!("cannot be installed: {e}"));
        }
        let cfg = taskproof_race::Config {
            target: target.clone(),
            writers: self.writers,
            ops: self.ops,
            kill: false,
            seed: self.seed,
            duration: None,
            fsync: false,
            readers: 2,
            timeout: self.limits.timeout,
            profile: Profile::Strict,
            settle: if target.acts_between_requests() {
                taskproof_race::driver::DEFAULT_SETTLE
            } else {
                Duration::ZERO
            },
            drive: None,
        };
        let report = match taskproof_race::run_all(
            &cfg,
            &taskproof_race::Mix::default(),
            &[self.workload],
            1,
            taskproof_race::DEFAULT_LIN_BUDGET,
            None,
            &|_, _| {},
        ) {
            Ok(r) => r,
            Err(e) => return Judged::Unusable(format!("the race could not run: {e}")),
        };
        let Some(w) = report.workloads.first() else {
            return Judged::Unusable("the race returned no workload".into());
        };
        if let Some(why) = &w.skipped {
            return Judged::Unusable(format!("the workload did not run: {why}"));
        }
        if report.errors > 0 {
            return Judged::Unusable(format!(
                "the target broke the protocol {} time(s) during the race",
                report.errors
            ));
        }
        let name = self.anomaly.name();
        let count = w.anomalies.get(name).copied().unwrap_or(0)
            + w.observations.get(name).copied().unwrap_or(0);
        let witness = w
            .witnesses
            .iter()
            .find(|x| x.kind == self.anomaly)
            .map(|x| x.text.clone())
            .unwrap_or_else(|| {
                format!(
                    "no {name} among {} acknowledged of {} requests",
                    w.acknowledged, w.requests
                )
            });
        let key = if count > 0 { "seen" } else { "none" };
        Judged::Seen(Seen {
            key: format!("{name}: {key}"),
            summary: format!("{name}: {count} in {} requests", w.requests),
            witness,
            failed_steps: Vec::new(),
            answers: BTreeMap::new(),
        })
    }
}
