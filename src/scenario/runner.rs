//! The runner: replays scenarios against a target and judges every answer.
//!
//! A scenario ends in one of three outcomes, [`Outcome::Pass`], [`Outcome::Fail`] (an answer
//! broke an expectation: a conformance result) or [`Outcome::Skip`] (the target lacks what the
//! scenario needs), or in a [`TargetFailure`]: the target crashed, hung, or broke the
//! protocol, so nothing could be judged. The two are kept apart as proptest keeps a rejected
//! case apart from a failed one. A scenario stops at its first failing step (later steps
//! would judge a state the scenario did not mean to reach) unless the run keeps going
//! ([`RunConfig::keep_going`]), and a failing step marked as a precondition skips the
//! scenario instead. Against a target whose layout is opaque, only the file steps and the
//! steps that depend on them are skipped ([`opaque_skips`]); the rest of the scenario runs.
//!
//! [`run_suite`] runs scenarios in parallel, each in its own [`Sandbox`], and hands each
//! result as an event to the caller (the reporters) as soon as it is done. Against a target
//! that takes seconds to start, start-up dominates a suite, so scenarios are prepared ahead
//! (a fresh sandbox with the sessions the scenario opens first already started on it) by
//! more threads than there are cores, while earlier scenarios run; see [`early_sessions`]
//! for why that is invisible to the target.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::expect::match_task;
use super::model::*;
use super::sandbox::{self, Sandbox};
use super::skip::SkipList;
use super::vars::{self, Vars};
use crate::graph::Graph;
use crate::profile::recorded::{Judged, RunRecord, State, StepKey};
use crate::profile::{Mode, Profile, observe};
use crate::protocol::{Hello, Op, Request, Response};
use crate::race::check;
use crate::race::history::History;
use crate::report::events::Event;
use crate::target::{Session, SessionOptions, TargetError, TargetSpec};
use crate::task::{Task, TaskId};

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
    /// (`crate::profile::recorded`). The two observing modes run `strict`'s steps.
    pub mode: Mode,
}

impl RunConfig {
    /// A run against `target` under its default profile, with default settings.
    pub fn new(target: TargetSpec) -> RunConfig {
        RunConfig {
            profile: target.default_profile(),
            target,
            timeout: crate::target::DEFAULT_TIMEOUT,
            start_timeout: crate::target::DEFAULT_START_TIMEOUT,
            keep_going: false,
            start_ahead: DEFAULT_START_AHEAD,
            jobs: 0,
            durable: false,
            skips: SkipList::default(),
            mode: Mode::Expectations,
        }
    }

    fn session_options(&self) -> SessionOptions {
        SessionOptions {
            timeout: self.timeout,
            start_timeout: self.start_timeout,
            durable: self.durable,
        }
    }
}

/// The judged outcome of a scenario that the target did not break.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Pass,
    Fail(Vec<StepFailure>),
    Skip(String),
}

/// One broken expectation, with everything a person needs to act on it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepFailure {
    /// Index in the file's `steps` (`None` for checks after the last step).
    pub step: Option<usize>,
    pub session: Option<String>,
    /// The request as sent (placeholders filled), when the step sent one.
    pub request: Option<Value>,
    pub expected: Value,
    pub actual: Value,
    /// What differs, in words.
    pub reason: String,
    pub rules: Vec<String>,
    pub note: Option<String>,
    /// The step as written in the file.
    pub step_json: Option<Value>,
}

/// A step that did not run, and why (its file steps, against a target whose layout is
/// opaque, and the steps that depend on them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSkip {
    pub step: usize,
    pub reason: String,
}

/// The target crashed, hung or broke the protocol: nothing could be judged.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetFailure {
    pub step: Option<usize>,
    pub request: Option<Value>,
    pub message: String,
}

/// The result of one scenario.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub id: String,
    pub title: String,
    pub file: std::path::PathBuf,
    pub source: Option<String>,
    pub rules: Vec<String>,
    pub result: Result<Outcome, TargetFailure>,
    /// What the target's sessions wrote to stderr (the tail, labelled by session).
    pub stderr: String,
    /// Observations that do not fail the scenario (a concurrent block the profile does not
    /// promise, say).
    pub notes: Vec<String>,
    /// Steps that did not run while the rest of the scenario did.
    pub skipped_steps: Vec<StepSkip>,
    pub elapsed: Duration,
}

/// The four ways a scenario can end, flattened for reports and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OutcomeKind {
    Pass,
    Fail,
    Skip,
    Error,
}

impl OutcomeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Pass => "pass",
            OutcomeKind::Fail => "fail",
            OutcomeKind::Skip => "skip",
            OutcomeKind::Error => "error",
        }
    }
}

impl ScenarioResult {
    pub fn kind(&self) -> OutcomeKind {
        match &self.result {
            Ok(Outcome::Pass) => OutcomeKind::Pass,
            Ok(Outcome::Fail(_)) => OutcomeKind::Fail,
            Ok(Outcome::Skip(_)) => OutcomeKind::Skip,
            Err(_) => OutcomeKind::Error,
        }
    }

    pub fn failures(&self) -> &[StepFailure] {
        match &self.result {
            Ok(Outcome::Fail(f)) => f,
            _ => &[],
        }
    }

    /// Why it was skipped or errored, or a one-line summary of the first failure.
    pub fn reason(&self) -> Option<String> {
        match &self.result {
            Ok(Outcome::Pass) => None,
            Ok(Outcome::Skip(r)) => Some(r.clone()),
            Ok(Outcome::Fail(f)) => f.first().map(|f| match f.step {
                Some(i) => format!("steps[{i}]: {}", f.reason),
                None => f.reason.clone(),
            }),
            Err(e) => Some(match e.step {
                Some(i) => format!("steps[{i}]: {}", e.message),
                None => e.message.clone(),
            }),
        }
    }

    /// The rule ids a failure is attributed to (the failing steps' rules), empty unless the
    /// scenario failed.
    pub fn failed_rules(&self) -> BTreeSet<String> {
        self.failures()
            .iter()
            .flat_map(|f| f.rules.iter().cloned())
            .collect()
    }
}

/// What is known about the target before any scenario runs: its `hello`, asked once on a
/// scratch root.
#[derive(Debug, Clone)]
pub struct TargetInfo {
    pub spec: String,
    pub hello: Result<Hello, String>,
    /// The adapter's stderr when the hello failed.
    pub stderr: String,
}

/// Counts over a suite; `failed` and `errors` are kept apart here, added up on the
/// summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub errors: usize,
}

impl Summary {
    pub fn add(&mut self, kind: OutcomeKind) {
        match kind {
            OutcomeKind::Pass => self.passed += 1,
            OutcomeKind::Fail => self.failed += 1,
            OutcomeKind::Skip => self.skipped += 1,
            OutcomeKind::Error => self.errors += 1,
        }
    }

    /// Whether the run is a success: nothing failed or errored.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.errors == 0
    }

    /// The last line of a run: `N passed, N failed, N errors, N skipped`. Errors (the
    /// target broke, so no verdict) are counted apart from failures (a verdict); the line
    /// starts `N passed, N failed` as before, for CI scripts that read it.
    pub fn line(&self) -> String {
        format!(
            "{} passed, {} failed, {} errors, {} skipped",
            self.passed, self.failed, self.errors, self.skipped
        )
    }
}

/// The results of a suite, sorted by scenario id.
#[derive(Debug, Clone)]
pub struct SuiteResult {
    pub target: TargetInfo,
    pub profile: Profile,
    pub scenarios: Vec<ScenarioResult>,
    pub elapsed: Duration,
}

impl SuiteResult {
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for r in &self.scenarios {
            s.add(r.kind());
        }
        s
    }
}

/// Asks the target's `hello` on a scratch root.
pub fn probe(config: &RunConfig) -> TargetInfo {
    let spec = config.target.to_string();
    let scratch = match tempfile::Builder::new()
        .prefix("taskproof-hello-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            return TargetInfo {
                spec,
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
                hello: closed
                    .map(|()| hello)
                    .map_err(|e| format!("answered, but then at end of input: {e}")),
                stderr,
            }
        }
        Err((e, stderr)) => TargetInfo {
            spec,
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
    let target = probe(config);
    on_event(&Event::RunStarted {
        target: &target,
        profile: config.profile,
        total: scenarios.len(),
    });
    let hello = match &target.hello {
        Ok(h) => h.clone(),
        Err(e) => {
            // The target cannot start: every scenario would fail the same way, so none is
            // run and the reporters say it once (the start event carries the reason).
            let results = scenarios
                .iter()
                .map(|s| not_run(s, format!("not run: the target failed its hello: {e}")))
                .collect();
            let suite = SuiteResult {
                target,
                profile: config.profile,
                scenarios: results,
                elapsed: started.elapsed(),
            };
            on_event(&Event::RunFinished { suite: &suite });
            return suite;
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
            // Starters prepare scenarios in order (a fresh sandbox, and the sessions the
            // scenario opens before it changes anything, started on its empty root) while
            // earlier scenarios run; at most `start_ahead` wait prepared. Starting is mostly
            // waiting for the target, so there may be more starters than cores.
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
            on_event(&Event::ScenarioFinished {
                result: results.last().expect("just pushed"),
                done: results.len(),
                total: scenarios.len(),
            });
        }
    });
    results.sort_by(|a, b| a.id.cmp(&b.id));
    let suite = SuiteResult {
        target,
        profile: config.profile,
        scenarios: results,
        elapsed: started.elapsed(),
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
                // Lanes start together; the verification session starts after them.
                usize::from(lanes > 0) + 1
            }
            _ => 0,
        };
    }
    count
}

/// The result of a scenario that was not run because the target could not start.
fn not_run(s: &Scenario, message: String) -> ScenarioResult {
    ScenarioResult {
        id: s.id.clone(),
        title: s.title.clone(),
        file: s.file.clone(),
        source: s.source.clone(),
        rules: s.rules.clone(),
        result: Err(TargetFailure {
            step: None,
            request: Some(json!({"op": "hello"})),
            message,
        }),
        stderr: String::new(),
        notes: Vec::new(),
        skipped_steps: Vec::new(),
        elapsed: Duration::ZERO,
    }
}

/// A scenario's fresh sandbox with the sessions it opens before it changes anything, each
/// already started on the empty root (or the error it failed with, and its stderr).
pub struct Prepared {
    sandbox: Sandbox,
    sessions: Vec<(String, Opened)>,
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
    if skip_reason(s, config.profile, hello).is_some() {
        return None;
    }
    let sandbox = Sandbox::new().ok()?;
    let names = early_sessions(s, config.profile);
    let root = sandbox.root();
    let options = config.session_options();
    let sessions = std::thread::scope(|scope| {
        let handles: Vec<_> = names
            .into_iter()
            .map(|name| {
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
    Some(Prepared { sandbox, sessions })
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
    let (result, stderr, notes, skipped_steps) = match ran {
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
            )
        }
    };
    // [recorded profiles] A recording run hands every scenario's observations over.
    if let Mode::Record(observer) = &config.mode {
        observer.push(RunRecord {
            id: s.id.clone(),
            title: s.title.clone(),
            rules: s.rules.clone(),
            state: match &result {
                Ok(Outcome::Skip(r)) => State::Skipped(r.clone()),
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
            }])),
            Ok(Outcome::Skip(r)) => Ok(Outcome::Skip(r)),
            Ok(Outcome::Fail(_)) | Err(_) => {
                Ok(Outcome::Skip(format!("expected failure: {reason}")))
            }
        },
    };
    ScenarioResult {
        id: s.id.clone(),
        title: s.title.clone(),
        file: s.file.clone(),
        source: s.source.clone(),
        rules: s.rules.clone(),
        result,
        stderr,
        notes,
        skipped_steps,
        elapsed: started.elapsed(),
    }
}

type JudgedScenario = (
    Result<Outcome, TargetFailure>,
    String,
    Vec<String>,
    Vec<StepSkip>,
);

/// [recorded profiles] What each step showed, by step: its own rules, what strict expects
/// and the observation (`crate::profile::observe`).
type Observed = BTreeMap<StepKey, crate::profile::recorded::Observed>;

fn judge(
    s: &Scenario,
    config: &RunConfig,
    target: &TargetInfo,
    prepared: Option<Prepared>,
    observed: &mut Observed,
) -> JudgedScenario {
    let nothing = |result| (result, String::new(), Vec::new(), Vec::new());
    let hello = match &target.hello {
        Ok(h) => h,
        Err(e) => {
            return (
                Err(TargetFailure {
                    step: None,
                    request: Some(json!({"op": "hello"})),
                    message: format!("the target failed its hello: {e}"),
                }),
                target.stderr.clone(),
                Vec::new(),
                Vec::new(),
            );
        }
    };
    if let Some(reason) = skip_reason(s, config.profile, hello) {
        return nothing(Ok(Outcome::Skip(reason)));
    }
    // [recorded profiles] A scenario the profile recorded as skipped (or broken) is skipped.
    if let Mode::Hold(p) = &config.mode
        && let Some(reason) = p.skip_reason(&s.id)
    {
        return nothing(Ok(Outcome::Skip(reason)));
    }
    let step_skips = match hello.layout {
        crate::protocol::Layout::Opaque => opaque_skips(s, config.profile),
        _ => BTreeMap::new(),
    };
    let judging: Vec<usize> = s
        .steps_for(config.profile)
        .filter(|st| st.action.judges())
        .map(|st| st.index)
        .collect();
    if !step_skips.is_empty() && judging.iter().all(|i| step_skips.contains_key(i)) {
        let (i, why) = step_skips.iter().next().expect("not empty");
        return nothing(Ok(Outcome::Skip(format!(
            "every step that judges something needs the target's files: steps[{i}] {why}"
        ))));
    }
    let prepared = match prepared {
        Some(p) => p,
        None => match Sandbox::new() {
            Ok(sandbox) => Prepared {
                sandbox,
                sessions: Vec::new(),
            },
            Err(e) => {
                return nothing(Err(TargetFailure {
                    step: None,
                    request: None,
                    message: format!("internal error: failed to create a sandbox: {e}"),
                }));
            }
        },
    };
    let mut run = Run {
        scenario: s,
        config,
        layout: hello.layout,
        sandbox: prepared.sandbox,
        sessions: BTreeMap::new(),
        failed_opens: BTreeMap::new(),
        ended: Vec::new(),
        vars: Vars::new(),
        notes: Vec::new(),
        observation: None,
    };
    for (name, opened) in prepared.sessions {
        match opened {
            Ok(session) => {
                run.sessions.insert(name, session);
            }
            Err(failed) => {
                run.failed_opens.insert(name, failed);
            }
        }
    }
    let mut skipped = Vec::new();
    let mut failures: Vec<StepFailure> = Vec::new();
    let mut error = None;
    let mut unmet = None;
    for step in s.steps_for(config.profile) {
        if let Some(reason) = step_skips.get(&step.index) {
            skipped.push(StepSkip {
                step: step.index,
                reason: reason.clone(),
            });
            continue;
        }
        run.observation = None;
        let stepped = run.step(step);
        // [recorded profiles] Observe the step; under a recorded profile, judge that.
        let stepped = match config.mode {
            Mode::Expectations => stepped,
            _ => run.observe(step, stepped, observed),
        };
        match stepped {
            Ok(()) => {}
            Err(Stop::Error(e)) => {
                error = Some(e);
                break;
            }
            Err(Stop::Fail(f)) => {
                if let Some(what) = &step.precondition {
                    unmet = Some(format!(
                        "the target does not meet the precondition at steps[{}] ({what}): {}",
                        step.index, f.reason
                    ));
                    break;
                }
                failures.push(*f);
                if !config.keep_going {
                    break;
                }
            }
        }
    }
    let result = if let Some(e) = error {
        run.kill_all();
        Err(e)
    } else if !failures.is_empty() {
        run.kill_all();
        failures.extend(run.escapes());
        Ok(Outcome::Fail(failures))
    } else if let Some(reason) = unmet {
        run.kill_all();
        Ok(Outcome::Skip(reason))
    } else {
        match run.close_all() {
            Err(e) => Err(e),
            Ok(()) => {
                let mut escapes: Vec<StepFailure> = run.escapes().into_iter().collect();
                // [recorded profiles] What escaped the root is the observation at `end`.
                if !matches!(config.mode, Mode::Expectations) {
                    let obs = escapes.first().map(|f| observe::failed(&f.reason));
                    escapes = run
                        .observed_at(
                            StepKey::End,
                            None,
                            json!("nothing outside the root appears or changes"),
                            obs,
                            observed,
                        )
                        .into_iter()
                        .collect();
                }
                if escapes.is_empty() {
                    Ok(Outcome::Pass)
                } else {
                    Ok(Outcome::Fail(escapes))
                }
            }
        }
    };
    (result, run.stderr(), run.notes, skipped)
}

/// Against a target whose layout is opaque: the steps that cannot run, each with why. A
/// file step cannot run; a step that writes files changes its list (the first folder of its
/// path) behind the store's back, so every later step on that list depends on it, and so
/// does every step using a variable bound by a skipped step. A skipped step that would have
/// changed a list taints that list in turn. Steps on other lists, and session steps, run.
pub fn opaque_skips(s: &Scenario, profile: Profile) -> BTreeMap<usize, String> {
    let mut out = BTreeMap::new();
    // List name as written -> the step that first left it in an unknown state.
    let mut lists: BTreeMap<String, usize> = BTreeMap::new();
    // Variable -> the skipped step that would have bound it.
    let mut unbound: BTreeMap<String, usize> = BTreeMap::new();
    // A file step whose list cannot be told (a path built from a variable) taints all.
    let mut everything: Option<usize> = None;
    for step in s.steps_for(profile) {
        let i = step.index;
        if step.action.is_file_step() {
            out.insert(
                i,
                "touches files, but the target's layout is opaque".to_string(),
            );
            if step.action.writes_files() {
                match written_list(&step.action) {
                    Some(l) => {
                        lists.entry(l).or_insert(i);
                    }
                    None => {
                        everything.get_or_insert(i);
                    }
                }
            }
            continue;
        }
        let touched = step_lists(step);
        let used: Vec<String> = super::load::templated(step)
            .iter()
            .filter_map(|(v, p)| vars::uses(v, p).ok())
            .flatten()
            .map(|(name, _)| name)
            .collect();
        let why = if let Some(j) = everything {
            Some(format!(
                "depends on steps[{j}], which changed the root's files (the target's layout is opaque)"
            ))
        } else if let Some((l, j)) = touched
            .iter()
            .find_map(|l| lists.get(l).map(|j| (l.clone(), *j)))
        {
            Some(format!(
                "uses list {l}, which steps[{j}] changed through its files (the target's layout is opaque)"
            ))
        } else {
            used.iter().find_map(|v| {
                unbound
                    .get(v)
                    .map(|j| format!("uses ${{{v}}}, which skipped steps[{j}] would have bound"))
            })
        };
        let Some(why) = why else { continue };
        out.insert(i, why);
        if let Action::Send { bind, .. } = &step.action {
            for (name, _) in bind {
                unbound.entry(name.clone()).or_insert(i);
            }
        }
        for l in touched {
            lists.entry(l).or_insert(i);
        }
    }
    out
}

/// The list a file-writing step writes in: the first folder of its path, when it is plain.
fn written_list(a: &Action) -> Option<String> {
    let path = match a {
        Action::WriteTask { list, .. } => return plain(list),
        Action::WriteFile { path, .. } | Action::Symlink { path, .. } => path,
        Action::Mkdir(path) | Action::RemoveFile(path) => path,
        _ => return None,
    };
    let first = path.split('/').next()?;
    // A folder at the top of the root is a list itself.
    plain(first)
}

fn plain(s: &str) -> Option<String> {
    (!s.contains("${") && !s.contains('{')).then(|| s.to_string())
}

/// The lists a step reads or changes through the store, as written.
fn step_lists(step: &Step) -> Vec<String> {
    let of = |r: &Value| r.get("list").and_then(Value::as_str).map(str::to_string);
    match &step.action {
        Action::Send { request, .. } => of(request).into_iter().collect(),
        Action::Check { list, .. } => vec![list.clone()],
        Action::Concurrent(c) => {
            let mut out: Vec<String> = c.lanes.iter().filter_map(|l| of(&l.send)).collect();
            out.push(c.list.clone());
            out
        }
        _ => Vec::new(),
    }
}

/// Why a scenario cannot run against this target under this profile, if it cannot.
pub fn skip_reason(s: &Scenario, profile: Profile, hello: &Hello) -> Option<String> {
    if !s.profiles.contains(&profile) {
        let covered: Vec<&str> = s.profiles.iter().map(|p| p.as_str()).collect();
        return Some(format!(
            "no expectations for profile {profile} (the scenario covers {})",
            covered.join(", ")
        ));
    }
    let missing: Vec<String> = s
        .needs_for(profile)
        .into_iter()
        .filter(|(f, _)| !hello.has(*f))
        .map(|(f, at)| match at {
            Some(i) => format!("{f} (used by steps[{i}])"),
            None => format!("{f} (named in needs)"),
        })
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "the target lacks the feature {}",
            missing.join(" and ")
        ));
    }
    None
}

/// Why a scenario stopped early.
enum Stop {
    Fail(Box<StepFailure>),
    Error(TargetFailure),
}

/// One running scenario.
struct Run<'a> {
    scenario: &'a Scenario,
    config: &'a RunConfig,
    layout: crate::protocol::Layout,
    sandbox: Sandbox,
    sessions: BTreeMap<String, Box<dyn Session>>,
    /// Sessions opened ahead that failed to start: the error is reported where the
    /// scenario first uses the session, as if it had been opened there.
    failed_opens: BTreeMap<String, (TargetError, String)>,
    /// Stderr of sessions that already ended, labelled.
    ended: Vec<(String, String)>,
    vars: Vars,
    notes: Vec<String>,
    /// [recorded profiles] What the current step showed, when it did not behave as strict
    /// expects and the step itself can say more than "it failed" (set only when observing).
    observation: Option<Value>,
}

/// The most stderr kept per session for the report, from the end.
const STDERR_TAIL: usize = 4096;

/// The name of the session a concurrent block's verification reads through; scenario
/// session names cannot contain `#`.
const VERIFY_SESSION: &str = "#verify";

impl Run<'_> {
    fn rules(&self, step: &Step) -> Vec<String> {
        step.rules
            .clone()
            .unwrap_or_else(|| self.scenario.rules.clone())
    }

    fn fail(
        &self,
        step: &Step,
        request: Option<Value>,
        expected: Value,
        actual: Value,
        reason: impl Into<String>,
    ) -> Stop {
        Stop::Fail(Box::new(StepFailure {
            step: Some(step.index),
            session: Some(step.session.clone()),
            request,
            expected,
            actual,
            reason: reason.into(),
            rules: self.rules(step),
            note: step.note.clone(),
            step_json: Some(step.raw.clone()),
        }))
    }

    fn target_error(step: &Step, request: Option<Value>, message: String) -> Stop {
        Stop::Error(TargetFailure {
            step: Some(step.index),
            request,
            message,
        })
    }

    /// The named session, opened on first use.
    fn session(&mut self, step: &Step, name: &str) -> Result<&mut Box<dyn Session>, Stop> {
        if !self.sessions.contains_key(name) {
            let opened = match self.failed_opens.remove(name) {
                Some(failed) => Err(failed),
                None => self
                    .config
                    .target
                    .open_with_stderr(self.sandbox.root(), self.config.session_options()),
            };
            match opened {
                Ok(s) => {
                    self.sessions.insert(name.to_string(), s);
                }
                Err((e, stderr)) => {
                    self.ended.push((name.to_string(), stderr));
                    return Err(Self::target_error(
                        step,
                        Some(json!({"op": "hello"})),
                        format!("session {name}: {e}"),
                    ));
                }
            }
        }
        Ok(self.sessions.get_mut(name).expect("opened above"))
    }

    /// Ends a session: killed, or closed normally (a bad exit is an error of the target).
    fn end(&mut self, name: &str, kill: bool) -> Result<(), TargetError> {
        let Some(mut s) = self.sessions.remove(name) else {
            return Ok(());
        };
        let closed = if kill {
            s.kill();
            Ok(())
        } else {
            s.close()
        };
        self.ended.push((name.to_string(), s.stderr()));
        closed
    }

    /// Kills every session (after a failure there is nothing left to judge).
    fn kill_all(&mut self) {
        let names: Vec<String> = self.sessions.keys().cloned().collect();
        for name in names {
            let _ = self.end(&name, true);
        }
    }

    /// Ends every session normally; an adapter that does not exit with status 0 at the end
    /// of its input broke the protocol.
    fn close_all(&mut self) -> Result<(), TargetFailure> {
        let names: Vec<String> = self.sessions.keys().cloned().collect();
        let mut first = None;
        for name in names {
            if let Err(e) = self.end(&name, false) {
                first.get_or_insert(TargetFailure {
                    step: None,
                    request: None,
                    message: format!("session {name} at the end of the scenario: {e}"),
                });
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Everything that escaped the root, as one failure under S13.
    fn escapes(&self) -> Option<StepFailure> {
        let found = self.sandbox.escapes();
        if found.is_empty() {
            return None;
        }
        Some(StepFailure {
            step: None,
            session: None,
            request: None,
            expected: json!("nothing outside the root appears or changes"),
            actual: json!(found),
            reason: format!("the sandbox outside the root changed: {}", found.join(", ")),
            rules: vec!["S13".into()],
            note: None,
            step_json: None,
        })
    }

    fn stderr(&self) -> String {
        let mut parts: Vec<(String, String)> = self.ended.clone();
        for (name, s) in &self.sessions {
            parts.push((name.clone(), s.stderr()));
        }
        let mut out = String::new();
        for (name, text) in parts {
            let text = text.trim_end();
            if text.is_empty() {
                continue;
            }
            let tail = match text.char_indices().rev().nth(STDERR_TAIL) {
                Some((i, _)) => format!("…{}", &text[i..]),
                None => text.to_string(),
            };
            out.push_str(&format!("[session {name}]\n{tail}\n"));
        }
        out
    }

    /// The failure of a step that uses a variable no earlier step bound.
    fn unbound(&self, step: &Step, e: impl std::fmt::Display) -> Stop {
        self.fail(
            step,
            None,
            json!("all variables bound"),
            Value::Null,
            e.to_string(),
        )
    }

    fn fill(&self, step: &Step, v: &Value) -> Result<Value, Stop> {
        vars::substitute(v, &self.vars).map_err(|e| self.unbound(step, e))
    }

    fn fill_text(&self, step: &Step, s: &str) -> Result<String, Stop> {
        vars::substitute_text(s, &self.vars).map_err(|e| self.unbound(step, e))
    }

    /// A path inside the root: placeholders, then `{task:ID}`, then the containment check.
    fn root_path(&self, step: &Step, p: &str) -> Result<std::path::PathBuf, Stop> {
        let text = self.fill_text(step, p)?;
        sandbox::task_paths(&text, self.layout)
            .and_then(|t| self.sandbox.in_root(&t))
            .map_err(|m| self.fail(step, None, json!(p), json!(text), m))
    }

    /// Sends a request and checks that the answer is protocol-valid for its op.
    fn call(&mut self, step: &Step, session: &str, request: &Value) -> Result<Value, Stop> {
        let s = self.session(step, session)?;
        let answer = s.call(request).map_err(|e| {
            Self::target_error(
                step,
                Some(request.clone()),
                format!("session {session}: {e}"),
            )
        })?;
        valid_answer(request, &answer)
            .map_err(|m| Self::target_error(step, Some(request.clone()), m))?;
        Ok(answer)
    }

    fn step(&mut self, step: &Step) -> Result<(), Stop> {
        let io_fail = |run: &Run<'_>, what: &str, e: std::io::Error| {
            run.fail(
                step,
                None,
                json!(what),
                json!(e.to_string()),
                format!("failed to {what}: {e}"),
            )
        };
        match &step.action {
            Action::Send {
                request,
                expect,
                bind,
            } => {
                let request = self.fill(step, request)?;
                let answer = self.call(step, &step.session, &request)?;
                let expect = expect
                    .get(self.config.profile)
                    .expect("the loader checked that every profile is covered");
                let expect = expect.substitute(&self.vars).map_err(|e| {
                    self.fail(
                        step,
                        Some(request.clone()),
                        expect.to_json(),
                        answer.clone(),
                        e.to_string(),
                    )
                })?;
                if let Mode::Expectations = self.config.mode {
                    if let Err(reason) = expect.judge(&answer) {
                        return Err(self.fail(
                            step,
                            Some(request),
                            expect.to_json(),
                            answer,
                            reason,
                        ));
                    }
                } else {
                    // [recorded profiles] Observed, not judged; later steps bind as usual.
                    self.observation = observe::send(&expect, &answer);
                }
                if answer.get("ok") == Some(&Value::Bool(true)) {
                    for (name, path) in bind {
                        match vars::lookup(&answer, path) {
                            Some(v) => {
                                self.vars.insert(name.clone(), v.clone());
                            }
                            None => {
                                return Err(self.fail(
                                    step,
                                    Some(request),
                                    json!({ "bind": { name.clone(): path } }),
                                    answer,
                                    format!("cannot bind `{name}`: the answer has no {path}"),
                                ));
                            }
                        }
                    }
                }
                Ok(())
            }
            Action::Open(name) => self.session(step, name).map(|_| ()),
            Action::Restart(name) => {
                self.end(name, true)
                    .map_err(|e| Self::target_error(step, None, e.to_string()))?;
                self.session(step, name).map(|_| ())
            }
            Action::Kill(name) => self
                .end(name, true)
                .map_err(|e| Self::target_error(step, None, e.to_string())),
            Action::Close(name) => self
                .end(name, false)
                .map_err(|e| Self::target_error(step, None, format!("session {name}: {e}"))),
            Action::WriteTask { list, id, task } => {
                let list = self.fill_text(step, list)?;
                let id = self.fill_text(step, id)?;
                let task = self.fill(step, task)?;
                let path = self.root_path(step, &format!("{list}/{{task:{id}}}"))?;
                let bytes =
                    serde_json::to_vec_pretty(&sandbox::encode_task(self.layout, &id, &task))
                        .expect("JSON values serialize");
                write_creating(&path, &bytes).map_err(|e| io_fail(self, "write the task file", e))
            }
            Action::WriteFile { path, contents } => {
                let p = self.root_path(step, path)?;
                let bytes = self.contents(step, contents)?;
                write_creating(&p, &bytes).map_err(|e| io_fail(self, "write the file", e))
            }
            Action::OutsideFile { name, contents } => {
                let bytes = self.contents(step, contents)?;
                self.sandbox
                    .write_outside(name, &bytes)
                    .map_err(|e| io_fail(self, "write the outside file", e))
            }
            Action::Symlink { path, to } => {
                let p = self.root_path(step, path)?;
                let target = match to {
                    LinkTarget::Outside(name) => self.sandbox.outside_path(name),
                    LinkTarget::Inside(rel) => self.root_path(step, rel)?,
                };
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| io_fail(self, "create the link's folder", e))?;
                }
                std::os::unix::fs::symlink(&target, &p)
                    .map_err(|e| io_fail(self, "make the symbolic link", e))
            }
            Action::Mkdir(path) => {
                let p = self.root_path(step, path)?;
                std::fs::create_dir_all(&p).map_err(|e| io_fail(self, "make the folder", e))
            }
            Action::RemoveFile(path) => {
                let p = self.root_path(step, path)?;
                let removed = match std::fs::symlink_metadata(&p) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
                    _ => std::fs::remove_file(&p),
                };
                removed.map_err(|e| io_fail(self, "remove the file", e))
            }
            Action::AssertFile { path, check } => {
                let p = self.root_path(step, path)?;
                self.assert_file(step, path, &p, check)
            }
            Action::AssertOutside { name, text } => {
                let want = self.fill_text(step, text)?;
                let got = std::fs::read(self.sandbox.outside_path(name));
                match got {
                    Ok(bytes) if bytes == want.as_bytes() => Ok(()),
                    Ok(bytes) => Err(self.fail(
                        step,
                        None,
                        json!(want),
                        json!(String::from_utf8_lossy(&bytes)),
                        format!("outside/{name} changed"),
                    )),
                    Err(e) => Err(self.fail(
                        step,
                        None,
                        json!(want),
                        json!(e.to_string()),
                        format!("outside/{name} cannot be read: {e}"),
                    )),
                }
            }
            Action::Check {
                list,
                invariants,
                ready,
            } => {
                let list = self.fill_text(step, list)?;
                let ready = ready
                    .as_ref()
                    .map(|r| self.fill(step, &Value::Array(r.clone())))
                    .transpose()?;
                self.check(step, &list, invariants, ready.as_ref())
            }
            Action::Concurrent(c) => self.concurrent(step, c),
        }
    }

    fn contents(&self, step: &Step, c: &Contents) -> Result<Vec<u8>, Stop> {
        Ok(match c {
            Contents::Text(t) => self.fill_text(step, t)?.into_bytes(),
            Contents::Bytes(b) => b.clone(),
        })
    }

    fn assert_file(
        &self,
        step: &Step,
        written: &str,
        p: &std::path::Path,
        check: &FileCheck,
    ) -> Result<(), Stop> {
        let shown = p
            .strip_prefix(self.sandbox.root())
            .unwrap_or(p)
            .display()
            .to_string();
        let fail = |expected: Value, actual: Value, reason: String| {
            self.fail(step, None, expected, actual, reason)
        };
        match check {
            FileCheck::Exists(want) => {
                let exists = std::fs::symlink_metadata(p).is_ok();
                if exists == *want {
                    Ok(())
                } else {
                    Err(fail(
                        json!({"path": written, "exists": want}),
                        json!({"path": shown, "exists": exists}),
                        format!(
                            "{shown} {}",
                            if exists { "exists" } else { "does not exist" }
                        ),
                    ))
                }
            }
            FileCheck::Text(text) => {
                let want = self.fill_text(step, text)?;
                match std::fs::read(p) {
                    Ok(b) if b == want.as_bytes() => Ok(()),
                    Ok(b) => Err(fail(
                        json!(want),
                        json!(String::from_utf8_lossy(&b)),
                        format!("{shown} holds other text"),
                    )),
                    Err(e) => Err(fail(
                        json!(want),
                        json!(e.to_string()),
                        format!("{shown} cannot be read: {e}"),
                    )),
                }
            }
            FileCheck::Task(t) => {
                let want = self.fill(step, t)?;
                let bytes = std::fs::read(p).map_err(|e| {
                    fail(
                        want.clone(),
                        json!(e.to_string()),
                        format!("{shown} cannot be read: {e}"),
                    )
                })?;
                let parsed: Value = serde_json::from_slice(&bytes).map_err(|e| {
                    fail(
                        want.clone(),
                        json!(String::from_utf8_lossy(&bytes)),
                        format!("{shown} is not JSON: {e}"),
                    )
                })?;
                let decoded = sandbox::decode_task(self.layout, &parsed);
                match_task(&want, &decoded)
                    .map_err(|m| fail(want.clone(), parsed.clone(), format!("{shown}: {m}")))
            }
        }
    }

    /// Lists `list` through the step's session and decodes the tasks.
    fn listing(&mut self, step: &Step, session: &str, list: &str) -> Result<Vec<Task>, Stop> {
        let request = json!({"op": "list", "list": list});
        let answer = self.call(step, session, &request)?;
        match Response::from_json(&answer, Op::List) {
            Ok(Response::Tasks { tasks, .. }) => Ok(tasks),
            Ok(_) => Err(self.fail(
                step,
                Some(request),
                json!({"ok": true}),
                answer.clone(),
                format!("cannot check list {list}: listing it failed"),
            )),
            Err(m) => Err(Self::target_error(step, Some(request), m)),
        }
    }

    fn check(
        &mut self,
        step: &Step,
        list: &str,
        invariants: &[Invariant],
        ready: Option<&Value>,
    ) -> Result<(), Stop> {
        let session = step.session.clone();
        let tasks = self.listing(step, &session, list)?;
        let g = Graph::new(&tasks);
        let mut broken = Vec::new();
        let mut counts = Vec::new();
        let mut ready_seen = None;
        for inv in invariants {
            let found = violations(&g, *inv);
            counts.push((inv.as_str().to_string(), found.len()));
            broken.extend(found);
        }
        if let Some(want) = ready {
            let want_ids: BTreeSet<String> = want
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .collect();
            let got: BTreeSet<String> = g.ready().iter().map(TaskId::to_string).collect();
            if want_ids != got {
                broken.push(format!("ready: expected {:?}, got {:?}", want_ids, got));
                ready_seen = Some(got.into_iter().collect());
            }
        }
        if broken.is_empty() {
            return Ok(());
        }
        // [recorded profiles] Observed: violations per invariant, and the ready set seen.
        if !matches!(self.config.mode, Mode::Expectations) {
            self.observation = Some(observe::check(&counts, ready_seen));
            return Ok(());
        }
        let mut expected =
            json!({"invariants": invariants.iter().map(|i| i.as_str()).collect::<Vec<_>>()});
        if let Some(r) = ready {
            expected["ready"] = r.clone();
        }
        Err(self.fail(
            step,
            Some(json!({"op": "list", "list": list})),
            expected,
            json!({"tasks": tasks.iter().map(Task::to_json).collect::<Vec<_>>()}),
            broken.join("; "),
        ))
    }

    fn concurrent(&mut self, step: &Step, c: &Concurrent) -> Result<(), Stop> {
        // Every request is filled in before the lanes start, so that a lane only sends.
        let mut plans: Vec<(String, Vec<Value>)> = Vec::new();
        for lane in &c.lanes {
            let mut reqs = Vec::with_capacity(lane.repeat);
            for i in 0..lane.repeat {
                let mut vars = self.vars.clone();
                vars.insert("i".into(), json!(i));
                let r = vars::substitute(&lane.send, &vars).map_err(|e| self.unbound(step, e))?;
                reqs.push(r);
            }
            plans.push((lane.session.clone(), reqs));
        }
        // Lanes not yet open start together: each would start on the same root with nothing
        // happening between, so starting them at once changes nothing but the wait. With
        // `start_ahead` 0 every session opens alone, where it is first used.
        let missing: Vec<String> = plans
            .iter()
            .map(|(name, _)| name.clone())
            .filter(|n| !self.sessions.contains_key(n) && !self.failed_opens.contains_key(n))
            .collect();
        if missing.len() > 1 && self.config.start_ahead > 0 {
            let root = self.sandbox.root().to_path_buf();
            let options = self.config.session_options();
            let target = &self.config.target;
            let opened: Vec<_> = std::thread::scope(|scope| {
                let handles: Vec<_> = missing
                    .into_iter()
                    .map(|name| {
                        let root = &root;
                        scope.spawn(move || (name, target.open_with_stderr(root, options)))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("opening a session does not panic"))
                    .collect()
            });
            for (name, o) in opened {
                match o {
                    Ok(session) => {
                        self.sessions.insert(name, session);
                    }
                    Err(failed) => {
                        self.failed_opens.insert(name, failed);
                    }
                }
            }
        }
        let mut taken: Vec<(String, Box<dyn Session>, Vec<Value>)> = Vec::new();
        for (name, reqs) in plans {
            self.session(step, &name)?;
            let s = self.sessions.remove(&name).expect("opened above");
            taken.push((name, s, reqs));
        }
        let barrier = Barrier::new(taken.len());
        let t0 = Instant::now();
        type LaneLog = Vec<LaneEntry>;
        let finished: Vec<(String, Box<dyn Session>, LaneLog)> = std::thread::scope(|scope| {
            let handles: Vec<_> = taken
                .into_iter()
                .map(|(name, mut s, reqs)| {
                    let barrier = &barrier;
                    let lockstep = c.lockstep;
                    scope.spawn(move || {
                        let mut log = Vec::with_capacity(reqs.len());
                        let mut broke = false;
                        barrier.wait();
                        for (k, r) in reqs.into_iter().enumerate() {
                            if lockstep && k > 0 {
                                barrier.wait();
                            }
                            // A broken session sends nothing more, but in lockstep it keeps
                            // meeting the barrier, so no other lane waits for it forever.
                            if broke {
                                if lockstep {
                                    continue;
                                }
                                break;
                            }
                            let invoke = t0.elapsed();
                            let answer = s.call(&r);
                            broke = answer.is_err();
                            log.push((r, invoke, t0.elapsed(), answer));
                        }
                        (name, s, log)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .expect("a lane only sends requests and never panics")
                })
                .collect()
        });
        let mut acked = 0usize;
        let mut sent = 0usize;
        let mut first_error = None;
        let mut lanes: Vec<(String, LaneLog)> = Vec::new();
        for (name, s, log) in finished {
            self.sessions.insert(name.clone(), s);
            for (req, _, _, answer) in &log {
                sent += 1;
                match answer {
                    Err(e) => {
                        first_error.get_or_insert_with(|| {
                            Self::target_error(
                                step,
                                Some(req.clone()),
                                format!("session {name}: {e}"),
                            )
                        });
                    }
                    Ok(a) => {
                        if let Err(m) = valid_answer(req, a) {
                            first_error.get_or_insert_with(|| {
                                Self::target_error(step, Some(req.clone()), m)
                            });
                        } else if a.get("ok") == Some(&Value::Bool(true)) {
                            acked += 1;
                        }
                    }
                }
            }
            lanes.push((name, log));
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let list = self.fill_text(step, &c.list)?;
        let tasks = self.listing(step, VERIFY_SESSION, &list)?;
        self.end(VERIFY_SESSION, false)
            .map_err(|e| Self::target_error(step, None, format!("verification session: {e}")))?;
        let history = lane_history(&lanes);
        let broken = verify(c.verify, &history, &tasks);
        // [recorded profiles] Every block is observed, held or not, with its counts.
        if !matches!(self.config.mode, Mode::Expectations) {
            self.observation = Some(observe::concurrent(
                c.verify.as_str(),
                acked,
                sent,
                broken.len(),
            ));
            return Ok(());
        }
        if broken.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = lanes
            .iter()
            .enumerate()
            .map(|(w, (name, _))| format!("writer {w} is lane {name}"))
            .collect();
        let summary = format!(
            "{}: {} of {} acknowledged ({}); {} violation(s): {}",
            c.verify.as_str(),
            acked,
            sent,
            names.join(", "),
            broken.len(),
            broken
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        );
        match c.expect.get(self.config.profile) {
            Some(VerifyExpect::Any) | None => {
                self.notes.push(format!(
                    "steps[{}] (not promised under {}): {summary}",
                    step.index, self.config.profile
                ));
                Ok(())
            }
            Some(VerifyExpect::Holds) => Err(self.fail(
                step,
                None,
                json!({"verify": c.verify.as_str(), "expect": "holds"}),
                json!({"acknowledged": acked, "sent": sent, "violations": broken}),
                summary,
            )),
        }
    }
}

/// [recorded profiles] Observing a step, for `taskproof record` and for `run` against a
/// recorded profile (`crate::profile::recorded`). The only places the runner knows of
/// recorded profiles are marked `[recorded profiles]`.
impl Run<'_> {
    /// Turns a step's outcome into its observation: a target error or an unmet
    /// precondition passes through; anything else is observed (the step's own observation,
    /// or "it failed, and why") and, under a recorded profile, judged against the record.
    fn observe(
        &mut self,
        step: &Step,
        stepped: Result<(), Stop>,
        observed: &mut Observed,
    ) -> Result<(), Stop> {
        let obs = match stepped {
            Err(Stop::Error(e)) => return Err(Stop::Error(e)),
            Err(Stop::Fail(f)) if step.precondition.is_some() => return Err(Stop::Fail(f)),
            Err(Stop::Fail(f)) => Some(
                self.observation
                    .take()
                    .unwrap_or_else(|| observe::failed(&f.reason)),
            ),
            Ok(()) => self.observation.take(),
        };
        let strict = match &step.action {
            Action::Send { expect, .. } => expect
                .get(Profile::Strict)
                .map_or(Value::Null, |e| e.to_json()),
            Action::Concurrent(c) => match c.expect.get(Profile::Strict) {
                Some(VerifyExpect::Any) => json!("any"),
                _ => json!("holds"),
            },
            // The step as written, without the keys every step may have.
            _ => match &step.raw {
                Value::Object(m) => Value::Object(
                    m.iter()
                        .filter(|(k, _)| {
                            !["session", "only", "rules", "note", "precondition"]
                                .contains(&k.as_str())
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ),
                other => other.clone(),
            },
        };
        match self.observed_at(StepKey::Step(step.index), Some(step), strict, obs, observed) {
            Some(f) => Err(Stop::Fail(Box::new(f))),
            None => Ok(()),
        }
    }

    /// Keeps an observation (`None`: as strict) and, under a recorded profile, judges it:
    /// the failure, when the target differs from the record.
    fn observed_at(
        &mut self,
        key: StepKey,
        step: Option<&Step>,
        strict: Value,
        obs: Option<Value>,
        observed: &mut Observed,
    ) -> Option<StepFailure> {
        let rules = step.and_then(|s| s.rules.clone());
        let verdict = match &self.config.mode {
            Mode::Hold(p) => p.judge(&self.scenario.id, key, obs.as_ref()),
            _ => Judged::Holds,
        };
        let shown = obs.clone().unwrap_or_else(|| json!("as strict expects"));
        observed.insert(key, (rules, strict, obs));
        match verdict {
            Judged::Holds => None,
            Judged::NotJudged(note) => {
                self.notes.push(note);
                None
            }
            Judged::Differs { recorded, reason } => Some(StepFailure {
                step: step.map(|s| s.index),
                session: step.map(|s| s.session.clone()),
                request: None,
                expected: if recorded.is_null() {
                    json!("as strict expects")
                } else {
                    recorded
                },
                actual: shown,
                reason,
                rules: step.map_or_else(|| vec!["S13".to_string()], |s| self.rules(s)),
                note: step.and_then(|s| s.note.clone()),
                step_json: step.map(|s| s.raw.clone()),
            }),
        }
    }
}

/// Writes a file, creating its folders.
fn write_creating(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes)
}

/// Checks that `answer` is a protocol-valid answer to `request` (SPEC §2). A request whose
/// op is not one of the protocol's can only be judged as a failure or a plain success.
fn valid_answer(request: &Value, answer: &Value) -> Result<(), String> {
    let op = request
        .get("op")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Op>().ok());
    let checked = match op {
        Some(op) => Response::from_json(answer, op).map(|_| ()),
        None => match answer.get("ok") {
            Some(Value::Bool(true)) => Ok(()),
            _ => Response::from_json(answer, Op::Delete).map(|_| ()),
        },
    };
    checked.map_err(|reason| {
        let op = op.map_or("malformed", Op::as_str);
        format!("the adapter answered a {op} request with a malformed response: {reason}: {answer}")
    })
}

/// What breaks `inv` in the graph, in words.
fn violations(g: &Graph, inv: Invariant) -> Vec<String> {
    match inv {
        Invariant::Acyclic => g
            .cycles()
            .into_iter()
            .map(|c| {
                let path: Vec<String> = c.iter().map(TaskId::to_string).collect();
                format!("acyclic: cycle {}", path.join(" -> "))
            })
            .collect(),
        Invariant::Mirrored => g
            .half_edges()
            .into_iter()
            .map(|h| match h.missing {
                crate::graph::MissingSide::BlockedBy => format!(
                    "mirrored: {} blocks {} but {}'s blockedBy lacks {}",
                    h.blocker, h.blocked, h.blocked, h.blocker
                ),
                crate::graph::MissingSide::Blocks => format!(
                    "mirrored: {} is blockedBy {} but {}'s blocks lacks {}",
                    h.blocked, h.blocker, h.blocker, h.blocked
                ),
            })
            .collect(),
        Invariant::NoDangling => g
            .dangling()
            .into_iter()
            .map(|d| {
                format!(
                    "no_dangling: task {}'s {} names missing task {}",
                    d.task,
                    if d.in_blocked_by {
                        "blockedBy"
                    } else {
                        "blocks"
                    },
                    d.missing
                )
            })
            .collect(),
        Invariant::CompletedBlockers => g
            .completed_with_unfinished_blockers()
            .into_iter()
            .map(|(t, bs)| {
                let bs: Vec<String> = bs.iter().map(TaskId::to_string).collect();
                format!(
                    "completed_blockers: task {t} is completed but its blockers {} are not",
                    bs.join(", ")
                )
            })
            .collect(),
        Invariant::UniqueIds => g
            .duplicate_ids()
            .iter()
            .map(|id| format!("unique_ids: id {id} is listed more than once"))
            .collect(),
    }
}

/// One request of a concurrent lane: the request, when it was sent and answered (since the
/// block started), and the answer.
type LaneEntry = (Value, Duration, Duration, Result<Value, TargetError>);

/// The lanes' requests as a race-harness history, so that a concurrent block is judged by the
/// same checker as `taskproof race` (and its witnesses explain what was lost, by whom). Lane
/// `w` is session and writer `w`. Requests that are not well-formed requests cannot change
/// anything and are left out; an answer that is not a valid response counts as unanswered.
fn lane_history(lanes: &[(String, Vec<LaneEntry>)]) -> History {
    let typed = |req: &Value| Request::from_json(req).ok();
    let mut h = History::default();
    // Every request's values are interned before any answer is turned into a view.
    for (_, log) in lanes {
        for (req, ..) in log {
            if let Some(r) = typed(req) {
                h.intern_request(&r);
            }
        }
    }
    for (w, (_, log)) in lanes.iter().enumerate() {
        for (req, invoke, at, answer) in log {
            let Some(r) = typed(req) else { continue };
            let answer = match answer {
                Ok(v) => Response::from_json(v, r.op()),
                Err(e) => Err(e.to_string()),
            };
            h.record(w as u32, Some(w as u32), r, *invoke, *at, answer);
        }
    }
    h
}

/// Judges a concurrent block's history against the listing afterwards, with the race
/// harness's checker; each violation is a witness in plain words.
fn verify(v: Verify, history: &History, tasks: &[Task]) -> Vec<String> {
    let witnesses = match v {
        Verify::MetadataKept => check::lost_metadata(history, tasks),
        Verify::UniqueIds => {
            let mut w = check::duplicate_ids(history, tasks);
            w.extend(check::lost_creates(history, tasks));
            w
        }
        Verify::OneClaim => check::claims(history, tasks),
        Verify::Acyclic => {
            return violations(&Graph::new(tasks), Invariant::Acyclic);
        }
    };
    witnesses.into_iter().map(|w| w.text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: u64, owner: Option<&str>, metadata: Value) -> Task {
        let mut t = Task::new(TaskId(id), format!("t{id}"));
        t.owner = owner.map(str::to_string);
        t.metadata = metadata.as_object().cloned().filter(|m| !m.is_empty());
        t
    }

    /// A history of one lane per entry list, answered in order, 1 ms apart.
    fn history(lanes: Vec<Vec<(Value, Value)>>) -> History {
        let lanes: Vec<(String, Vec<LaneEntry>)> = lanes
            .into_iter()
            .enumerate()
            .map(|(w, entries)| {
                let log = entries
                    .into_iter()
                    .enumerate()
                    .map(|(k, (req, answer))| {
                        let t = Duration::from_millis((10 * k + w) as u64);
                        (req, t, t + Duration::from_millis(1), Ok(answer))
                    })
                    .collect();
                (format!("lane{w}"), log)
            })
            .collect();
        lane_history(&lanes)
    }

    fn update(id: &str, md: Value, after: Value) -> (Value, Value) {
        (
            json!({"op": "update", "list": "l", "id": id, "patch": {"metadata": md}}),
            json!({"ok": true, "task": {"id": id, "subject": "t1", "status": "pending", "metadata": after}}),
        )
    }

    #[test]
    fn metadata_kept_finds_a_lost_acknowledged_key() {
        let h = history(vec![
            vec![update("1", json!({"a0": 0}), json!({"a0": 0}))],
            vec![update("1", json!({"b0": 0}), json!({"b0": 0}))],
        ]);
        let kept = [task(1, None, json!({"a0": 0, "b0": 0}))];
        assert!(verify(Verify::MetadataKept, &h, &kept).is_empty());
        let lost = [task(1, None, json!({"b0": 0}))];
        let found = verify(Verify::MetadataKept, &h, &lost);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("a0"), "{found:?}");
    }

    #[test]
    fn unique_ids_finds_an_id_handed_out_twice() {
        let create = |s: &str, id: &str| {
            (
                json!({"op": "create", "list": "l", "task": {"subject": s}}),
                json!({"ok": true, "task": {"id": id, "subject": s, "status": "pending"}}),
            )
        };
        let h = history(vec![vec![create("t1", "1")], vec![create("t2", "1")]]);
        let listed = [task(1, None, json!({}))];
        let found = verify(Verify::UniqueIds, &h, &listed);
        assert!(found.iter().any(|f| f.contains("t2")), "{found:?}");
        assert!(
            found.len() >= 2,
            "a duplicate id and a lost create: {found:?}"
        );
        let fine = history(vec![vec![create("t1", "1")]]);
        assert!(verify(Verify::UniqueIds, &fine, &listed).is_empty());
    }

    #[test]
    fn one_claim_finds_a_double_claim() {
        let claim = |id: &str, owner: &str| {
            (
                json!({"op": "claim", "list": "l", "id": id, "owner": owner}),
                json!({"ok": true, "task": {"id": id, "subject": "t", "status": "in_progress", "owner": owner}}),
            )
        };
        let listed = [task(1, Some("b"), json!({})), task(2, Some("c"), json!({}))];
        let found = verify(
            Verify::OneClaim,
            &history(vec![
                vec![claim("1", "a"), claim("2", "c")],
                vec![claim("1", "b")],
            ]),
            &listed,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("task 1"), "{found:?}");
        let single = history(vec![vec![claim("1", "b"), claim("2", "c")]]);
        assert!(verify(Verify::OneClaim, &single, &listed).is_empty());
    }

    #[test]
    fn answers_are_checked_against_their_request() {
        let get = json!({"op": "get", "list": "l", "id": "1"});
        assert!(valid_answer(&get, &json!({"ok": false, "error": {"kind": "not_found"}})).is_ok());
        assert!(valid_answer(&get, &json!({"ok": true})).is_err());
        assert!(valid_answer(&get, &json!({"ok": false, "error": {"kind": "nope"}})).is_err());
        let malformed = json!({"op": "fly"});
        assert!(
            valid_answer(
                &malformed,
                &json!({"ok": false, "error": {"kind": "invalid"}})
            )
            .is_ok()
        );
    }

    fn scenario(steps: Value) -> Scenario {
        let v = json!({"id": "s", "title": "t", "rules": ["S1"], "profiles": ["strict"], "steps": steps});
        crate::scenario::load::parse_scenario(&v, std::path::Path::new("s.json")).unwrap()
    }

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

    #[test]
    fn opaque_skips_follow_lists_and_variables() {
        let s = scenario(json!([
            {"send": {"op": "create", "list": "l", "task": {"subject": "a"}}, "bind": {"a": "task.id"}},
            {"write_file": {"path": "l/9.json", "text": "{"}},
            {"send": {"op": "list", "list": "l"}, "bind": {"n": "tasks.0.id"}},
            {"send": {"op": "create", "list": "m", "task": {"subject": "${n}"}}},
            {"send": {"op": "get", "list": "k", "id": "${a}"}, "expect": "anything"},
            {"assert_file": {"path": "k/1.json", "exists": false}},
            {"send": {"op": "list", "list": "k"}},
        ]));
        let skips = opaque_skips(&s, Profile::Strict);
        let steps: Vec<usize> = skips.keys().copied().collect();
        // 1 writes list l; 2 lists l; 3 uses ${n} bound by 2 (and so list m is unknown);
        // 4 and 6 use list k, which only an assert_file (5, a read) touched.
        assert_eq!(steps, [1, 2, 3, 5]);
        assert_eq!(
            skips[&3],
            "uses ${n}, which skipped steps[2] would have bound"
        );
    }

    #[test]
    fn the_summary_line_counts_errors_apart_from_failures() {
        let s = Summary {
            passed: 3,
            failed: 1,
            skipped: 2,
            errors: 1,
        };
        assert_eq!(s.line(), "3 passed, 1 failed, 1 errors, 2 skipped");
        assert!(!s.ok());
    }
}
