//! Suite scheduling: runs scenarios in parallel, each in its own [`Sandbox`], and hands each
//! result as an event to the caller (the reporters) as soon as it is done.
//!
//! Against a target that takes seconds to start, start-up dominates a suite, so scenarios
//! are prepared ahead (a fresh sandbox with the sessions the scenario opens first already
//! started on it) by more threads than there are cores, while earlier scenarios run; see
//! [`early_sessions`] for why that is invisible to the target. The skip list is applied
//! here, to the judged outcome of each scenario ([`run_scenario`]).

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::format::*;
use crate::gate::gate;
use crate::runner::{Observed, judge};
use crate::sandbox::Sandbox;
use crate::skip::SkipList;
use taskproof_core::protocol::Hello;
use taskproof_model::model_log::LogHandle;
use taskproof_profile::recorded::StepKey;
use taskproof_profile::recorded::{RunRecord, State};
use taskproof_profile::{Mode, Profile, RunProfile};
use taskproof_report::events::Event;
use taskproof_report::result::{
    Outcome, ScenarioResult, StartTimes, StepFailure, SuiteResult, TargetFailure, TargetInfo,
};
use taskproof_session::wire::WireLog;
use taskproof_session::{Session, SessionOptions, TargetError};
use taskproof_targets::TargetSpec;

/// Scenarios prepared ahead by default: enough that sessions of a target that takes
/// seconds to start are ready when a runner frees up, few enough that the processes
/// waiting stay cheap.
pub const DEFAULT_START_AHEAD: usize = 8;

/// How a suite is run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub target: TargetSpec,
    pub profile: Profile,
    /// Per-request timeout.
    pub timeout: Duration,
    /// How long starting a session and its `hello` may take.
    pub start_timeout: Duration,
    /// Run every step of a scenario and report every difference, instead of stopping at
    /// the first failing step. A target error still ends the scenario.
    pub keep_going: bool,
    /// How many scenarios are prepared ahead of the running ones, each in its own fresh
    /// sandbox with the sessions it opens first already started; also how many threads
    /// start them. 0 opens every session where the scenario first uses it.
    pub start_ahead: usize,
    /// Scenarios run at once; 0 for the number of CPUs.
    pub jobs: usize,
    /// fsync in in-process stores. Scenarios never cut the power, so runs leave it off:
    /// a write survives the kill of a session either way.
    pub durable: bool,
    /// Scenarios expected to fail, with reasons.
    pub skips: SkipList,
    /// [recorded profiles] Judge by the scenario files' expectations (the default), or
    /// observe every step to record a profile, or hold the target to a recorded profile
    /// (`taskproof_profile::recorded`). The two observing modes run `strict`'s steps.
    pub mode: Mode,
    /// Idle time before given steps: (scenario id, step index) → how long the runner waits,
    /// sessions open and nothing sent, before that step (`record`'s time probe; a
    /// scenario's own `wait` steps are in its file).
    pub delays: std::collections::BTreeMap<(String, usize), Duration>,
    /// A folder for the scripted model's log of each scenario (`ID.jsonl`), for targets
    /// driven by one (Claude Code); others write none.
    pub model_log: Option<std::path::PathBuf>,
    /// A folder to write each failing scenario into for its maintainer (`DIR/ID/`: the
    /// lines a process target was sent and answered, a replay script and a report;
    /// `taskproof run --export`, crates/scenario/src/export/).
    pub export: Option<std::path::PathBuf>,
}

impl RunConfig {
    /// A run against `target` under its default profile, with default settings.
    pub fn new(target: TargetSpec) -> RunConfig {
        RunConfig {
            profile: target.default_profile(),
            target,
            timeout: taskproof_session::DEFAULT_TIMEOUT,
            start_timeout: taskproof_session::DEFAULT_START_TIMEOUT,
            keep_going: false,
            start_ahead: DEFAULT_START_AHEAD,
            jobs: 0,
            durable: false,
            skips: SkipList::default(),
            mode: Mode::Expectations,
            delays: std::collections::BTreeMap::new(),
            model_log: None,
            export: None,
        }
    }

    pub(super) fn session_options(&self) -> SessionOptions {
        SessionOptions {
            timeout: self.timeout,
            start_timeout: self.start_timeout,
            durable: self.durable,
            interactive: false,
            model_log: None,
            drive: None,
            wire: None,
        }
    }

    /// The options of the sessions of scenario `s`: interactive when it plays a user, and
    /// with the scenario's model log (one for all its sessions) when the run keeps them.
    pub(super) fn options_for(&self, s: &Scenario) -> SessionOptions {
        SessionOptions {
            interactive: s.plays_a_user(self.profile),
            model_log: self.model_log.as_ref().map(|dir| {
                LogHandle::new(
                    dir.join(format!("{}.jsonl", s.id)),
                    &self.target.to_string(),
                    &s.id,
                )
            }),
            // One log for all the scenario's sessions, when its failure is to be exported.
            wire: self.export.as_ref().map(|_| WireLog::new()),
            ..self.session_options()
        }
    }
}

/// Asks the target's `hello` on a scratch root.
pub fn probe(config: &RunConfig) -> TargetInfo {
    let spec = config.target.to_string();
    let configuration = config.target.configuration();
    let scratch = match tempfile::Builder::new()
        .prefix("taskproof-hello-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            return TargetInfo {
                spec,
                configuration,
                hello: Err(format!("failed to create a scratch root: {e}")),
                stderr: String::new(),
            };
        }
    };
    match config
        .target
        .open_with_stderr(scratch.path(), config.session_options())
    {
        Ok(mut s) => {
            let hello = s.hello().clone();
            let closed = s.close();
            let stderr = s.stderr();
            TargetInfo {
                spec,
                configuration,
                hello: closed
                    .map(|()| hello)
                    .map_err(|e| format!("answered, but then at end of input: {e}")),
                stderr,
            }
        }
        Err((e, stderr)) => TargetInfo {
            spec,
            configuration,
            hello: Err(e.to_string()),
            stderr,
        },
    }
}

/// Runs `scenarios` and reports each result through `on_event` as it finishes (on the
/// calling thread). The returned results are sorted by id.
pub fn run_suite(
    scenarios: &[Scenario],
    config: &RunConfig,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> SuiteResult {
    let started = Instant::now();
    // The target may have started processes for an earlier run (judge's parts share it).
    let starts_before = config.target.starts().map_or(0, |log| log.all().len());
    let target = probe(config);
    on_event(&Event::RunStarted {
        target: &target,
        profile: &RunProfile::of(config.profile, &config.mode),
        total: scenarios.len(),
    });
    let hello = match &target.hello {
        Ok(h) => h.clone(),
        Err(e) => {
            // The target cannot start: every scenario would fail the same way, so none is
            // run and the reporters say it once (the start event carries the reason).
            let results = scenarios
                .iter()
                .map(|s| ScenarioResult {
                    // What the target said as it failed: the cause (`Aborted()`) is there.
                    stderr: target.stderr.clone(),
                    ..not_run(s, format!("not run: the target failed its hello: {e}"))
                })
                .collect();
            return finish(target, config, results, (started, starts_before), on_event);
        }
    };
    let jobs = match config.jobs {
        0 => auto_jobs(&config.target),
        n => n,
    };
    // Scenarios that start the most sessions mid-run (restarts, concurrent blocks) take the
    // longest against a slow target: they go first, so that one of them is not the tail.
    let mut order: Vec<usize> = (0..scenarios.len()).collect();
    if config.start_ahead > 0 {
        order.sort_by_key(|&i| std::cmp::Reverse(late_starts(&scenarios[i], config.profile)));
    }
    // Scenarios that wait spend most of their time asleep: each runs on a thread of its own,
    // started first, so that waits overlap each other and the rest of the suite instead of
    // holding one of the `jobs` slots.
    let (waiting, order): (Vec<usize>, Vec<usize>) = order
        .into_iter()
        .partition(|&i| waits(&scenarios[i], config.profile));
    let order = &order;
    let mut results = Vec::with_capacity(scenarios.len());
    let (tx, rx) = mpsc::channel::<ScenarioResult>();
    let next = AtomicUsize::new(0);
    let (ready_tx, ready_rx) =
        mpsc::sync_channel::<(usize, Option<Prepared>)>(config.start_ahead.max(1));
    let ready_rx = Mutex::new(ready_rx);
    std::thread::scope(|scope| {
        let target = &target;
        let hello = &hello;
        let next = &next;
        for &i in &waiting {
            let tx = tx.clone();
            scope.spawn(move || {
                let s = &scenarios[i];
                let prepared = (config.start_ahead > 0)
                    .then(|| prepare(s, config, hello))
                    .flatten();
                let _ = tx.send(run_prepared(s, config, target, prepared));
            });
        }
        if config.start_ahead == 0 {
            // Every session opens when the scenario first uses it.
            for _ in 0..jobs {
                let tx = tx.clone();
                scope.spawn(move || {
                    while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let s = &scenarios[i];
                        if tx.send(run_prepared(s, config, target, None)).is_err() {
                            return;
                        }
                    }
                });
            }
        } else {
            // Starters take scenarios in order and prepare them (a fresh sandbox, and the
            // sessions the scenario opens before it changes anything, started on its empty
            // root) while earlier scenarios run; at most `start_ahead` wait prepared. Each is
            // handed on when it is ready, so even one job may run them out of order. Starting
            // is mostly waiting for the target, so there may be more starters than cores.
            for _ in 0..config.start_ahead {
                let ready_tx = ready_tx.clone();
                scope.spawn(move || {
                    loop {
                        let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            return;
                        };
                        let s = &scenarios[i];
                        let prepared = prepare(s, config, hello);
                        if ready_tx.send((i, prepared)).is_err() {
                            return;
                        }
                    }
                });
            }
            let ready_rx = &ready_rx;
            for _ in 0..jobs {
                let tx = tx.clone();
                scope.spawn(move || {
                    loop {
                        let got = ready_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((i, prepared)) = got else { return };
                        if tx
                            .send(run_prepared(&scenarios[i], config, target, prepared))
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
        }
        drop(tx);
        drop(ready_tx);
        for r in rx {
            results.push(r);
            let r = results.last().expect("just pushed");
            for step in &r.steps {
                on_event(&Event::StepFinished {
                    scenario: &r.id,
                    step,
                });
            }
            on_event(&Event::ScenarioFinished {
                result: results.last().expect("just pushed"),
                done: results.len(),
                total: scenarios.len(),
            });
        }
    });
    results.sort_by(|a, b| a.id.cmp(&b.id));
    finish(target, config, results, (started, starts_before), on_event)
}

/// The suite's result, reported as the run's last event. `since`: when the run started, and
/// how many starts the target's log held then.
fn finish(
    target: TargetInfo,
    config: &RunConfig,
    scenarios: Vec<ScenarioResult>,
    since: (Instant, usize),
    on_event: &mut dyn FnMut(&Event<'_>),
) -> SuiteResult {
    let (started, starts_before) = since;
    let elapsed = started.elapsed();
    let starts = config.target.starts().and_then(|log| {
        let starts: Vec<(Duration, bool)> = log
            .all()
            .iter()
            .skip(starts_before)
            .map(|s| (s.took, s.timed_out))
            .collect();
        let jobs = match config.jobs {
            0 => auto_jobs(&config.target),
            n => n,
        };
        StartTimes::of(
            log.greeting(),
            &starts,
            config.start_timeout,
            config.start_ahead,
            jobs,
            elapsed,
            DEFAULT_START_AHEAD,
        )
    });
    let suite = SuiteResult {
        target,
        profile: RunProfile::of(config.profile, &config.mode),
        scenarios,
        elapsed,
        starts,
    };
    on_event(&Event::RunFinished { suite: &suite });
    suite
}

/// Scenarios run at once when `--jobs` is not given: one per core for in-process targets;
/// for targets whose sessions are processes, twice as many (at least 4), because a scenario
/// against such a target mostly waits for sessions to start.
fn auto_jobs(target: &TargetSpec) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if target.is_process() {
        (2 * cores).max(4)
    } else {
        cores
    }
}

/// How many sessions a scenario starts after it began changing its root (so they cannot be
/// started ahead): restarts, later opens and first uses, and each concurrent block's lanes
/// and verification session. An estimate of how long it takes against a slow target.
pub fn late_starts(s: &Scenario, profile: Profile) -> usize {
    fn first(name: &str, open: &mut BTreeSet<String>) -> usize {
        usize::from(open.insert(name.to_string()))
    }
    let mut open: BTreeSet<String> = early_sessions(s, profile).into_iter().collect();
    let mut count = 0;
    for step in s.steps_for(profile) {
        count += match &step.action {
            Action::Open(n) => first(n, &mut open),
            Action::Restart(_) => 1,
            Action::Kill(n) | Action::Close(n) => {
                open.remove(n);
                0
            }
            Action::Send { .. } | Action::Check { .. } => first(&step.session, &mut open),
            Action::Concurrent(c) => {
                let lanes: usize = c.lanes.iter().map(|l| first(&l.session, &mut open)).sum();
                let then: usize = c.then.iter().map(|t| first(&t.session, &mut open)).sum();
                // Lanes start together; the verification session starts after them.
                usize::from(lanes > 0) + 1 + then
            }
            _ => 0,
        };
    }
    count
}

/// Whether scenario `s` has a `wait` step under `profile` (it then sleeps for real).
fn waits(s: &Scenario, profile: Profile) -> bool {
    s.steps_for(profile)
        .any(|st| matches!(st.action, Action::Wait(_)))
}

/// The result of a scenario that was not run because the target could not start.
fn not_run(s: &Scenario, message: String) -> ScenarioResult {
    result_of(
        s,
        Err(TargetFailure {
            step: None,
            request: Some(json!({"op": "hello"})),
            message,
        }),
    )
}

/// The result of scenario `s` with outcome `result` and nothing else to say yet.
fn result_of(s: &Scenario, result: Result<Outcome, TargetFailure>) -> ScenarioResult {
    ScenarioResult {
        id: s.id.clone(),
        title: s.title.clone(),
        file: s.file.clone(),
        source: s.source.clone(),
        rules: s.rules.clone(),
        result,
        stderr: String::new(),
        notes: Vec::new(),
        target_notes: Vec::new(),
        skipped_steps: Vec::new(),
        step_count: s.steps.len(),
        time_dependent: Vec::new(),
        steps: Vec::new(),
        elapsed: Duration::ZERO,
    }
}

/// A scenario's fresh sandbox with the sessions it opens before it changes anything, each
/// already started on the empty root (or the error it failed with, and its stderr).
pub struct Prepared {
    pub(super) sandbox: Sandbox,
    pub(super) sessions: Vec<(String, Opened)>,
    /// The options every session of the scenario opens with (one model log for all).
    pub(super) options: SessionOptions,
}

/// A session opened ahead, or why it failed to open and what it wrote to stderr.
type Opened = Result<Box<dyn Session>, (TargetError, String)>;

/// The sessions a scenario opens before any step changes its root, in order. Opening them
/// ahead is invisible to the target: each starts on the same empty root it would have
/// started on, and nothing happens on that root until the first of these steps runs.
/// Sessions opened later (after a request, a file step or a restart) may see state, so they
/// still open where the scenario opens them.
pub fn early_sessions(s: &Scenario, profile: Profile) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let add = |name: &str, out: &mut Vec<String>| {
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    };
    for step in s.steps_for(profile) {
        match &step.action {
            Action::Open(name) => add(name, &mut out),
            Action::OutsideFile { .. } | Action::AssertOutside { .. } => {}
            Action::Send { .. } | Action::Check { .. } => {
                add(&step.session, &mut out);
                break;
            }
            Action::Concurrent(c) => {
                for lane in &c.lanes {
                    add(&lane.session, &mut out);
                }
                for t in &c.then {
                    add(&t.session, &mut out);
                }
                break;
            }
            _ => break,
        }
    }
    out
}

/// Prepares a scenario that will run (`None` for one that will be skipped whole, or when
/// no sandbox can be made: the run then reports why).
fn prepare(s: &Scenario, config: &RunConfig, hello: &Hello) -> Option<Prepared> {
    if gate(s, config.profile, hello).is_some() {
        return None;
    }
    let sandbox = Sandbox::new().ok()?;
    let names = early_sessions(s, config.profile);
    let root = sandbox.root();
    let options = config.options_for(s);
    let sessions = std::thread::scope(|scope| {
        let handles: Vec<_> = names
            .into_iter()
            .map(|name| {
                let options = options.clone();
                scope.spawn(move || {
                    let opened = config.target.open_with_stderr(root, options);
                    (name, opened)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("opening a session does not panic"))
            .collect()
    });
    Some(Prepared {
        sandbox,
        sessions,
        options,
    })
}

/// Runs one scenario, applying the skip list. Never panics: a bug of the harness itself
/// becomes an error result naming it.
pub fn run_scenario(s: &Scenario, config: &RunConfig, target: &TargetInfo) -> ScenarioResult {
    run_prepared(s, config, target, None)
}

/// [`run_scenario`], with the sandbox and early sessions opened ahead when given.
fn run_prepared(
    s: &Scenario,
    config: &RunConfig,
    target: &TargetInfo,
    prepared: Option<Prepared>,
) -> ScenarioResult {
    let started = Instant::now();
    let mut observed = Observed::new();
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
        judge(s, config, target, prepared, &mut observed)
    }));
    let (result, stderr, notes, skipped_steps, steps, target_notes) = match ran {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            (
                Err(TargetFailure {
                    step: None,
                    request: None,
                    message: format!("internal error: the harness panicked: {msg}"),
                }),
                String::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
            )
        }
    };
    // [recorded profiles] The steps the profile held to records as time-dependent.
    let time_dependent: Vec<usize> = match &config.mode {
        Mode::Hold(p) => observed
            .keys()
            .filter_map(|k| match k {
                StepKey::Step(i) if p.is_time_dependent(&s.id, *k) => Some(*i),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    // [recorded profiles] A recording run hands every scenario's observations over.
    if let Mode::Record(observer) = &config.mode {
        observer.push(RunRecord {
            id: s.id.clone(),
            title: s.title.clone(),
            rules: s.rules.clone(),
            state: match &result {
                Ok(Outcome::Skip(r)) => State::Skipped(r.clone()),
                Ok(Outcome::NotJudged(parts)) => State::Skipped(format!(
                    "not judged: it needs {}",
                    taskproof_report::result::needs_text(parts)
                )),
                Ok(_) => State::Ran,
                Err(e) => State::Error(match e.step {
                    Some(i) => format!("steps[{i}]: {}", e.message),
                    None => e.message.clone(),
                }),
            },
            steps: observed,
        });
    }
    let mut notes = notes;
    let result = match config.skips.reason(&s.id) {
        None => result,
        Some(reason) => match result {
            Ok(Outcome::Pass) if config.skips.is_racy(&s.id) => {
                notes.push(format!(
                    "listed as a racy expected failure ({reason}), and passed this time"
                ));
                Ok(Outcome::Pass)
            }
            Ok(Outcome::Pass) => Ok(Outcome::Fail(vec![StepFailure {
                step: None,
                session: None,
                request: None,
                expected: json!({"outcome": "fail", "skip_reason": reason}),
                actual: json!({"outcome": "pass"}),
                reason: format!(
                    "unexpected pass: the skip file expects this scenario to fail ({reason}); remove it from the skip file"
                ),
                rules: s.rules.clone(),
                note: None,
                step_json: None,
                witness: None,
            }])),
            Ok(Outcome::Skip(r)) => Ok(Outcome::Skip(r)),
            Ok(Outcome::NotJudged(parts)) => Ok(Outcome::NotJudged(parts)),
            Ok(Outcome::Fail(_)) | Err(_) => {
                Ok(Outcome::Skip(format!("expected failure: {reason}")))
            }
        },
    };
    ScenarioResult {
        stderr,
        notes,
        target_notes,
        skipped_steps,
        step_count: s.steps_for(config.profile).count(),
        time_dependent,
        steps,
        elapsed: started.elapsed(),
        ..result_of(s, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::load::test_scenario as scenario;

    #[test]
    fn only_sessions_opened_before_anything_changes_are_opened_ahead() {
        let s = scenario(json!([
            {"open": "a"},
            {"outside_file": {"name": "x", "text": "1"}},
            {"open": "b"},
            {"send": {"op": "list", "list": "l"}, "session": "c"},
            {"open": "d"},
        ]));
        assert_eq!(early_sessions(&s, Profile::Strict), ["a", "b", "c"]);
        let s = scenario(json!([
            {"write_file": {"path": "l/1.json", "text": "{}"}},
            {"send": {"op": "list", "list": "l"}},
        ]));
        assert!(early_sessions(&s, Profile::Strict).is_empty());
        let s = scenario(json!([
            {"concurrent": {"lanes": [{"send": {"op": "list", "list": "l"}}, {"session": "z", "send": {"op": "list", "list": "l"}}],
                            "verify": "acyclic", "list": "l"}},
        ]));
        assert_eq!(early_sessions(&s, Profile::Strict), ["lane0", "z"]);
    }
}
