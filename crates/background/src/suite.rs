//! Runs background scenarios against a background-task target and judges them by the rules
//! of docs/background.md, into the report types of the store suite ([`ScenarioResult`],
//! [`SuiteResult`], the [`Event`] stream), so that `--report json/junit/md` and the exit
//! codes work unchanged. Each violation is a [`StepFailure`] citing its rule (B1…B8), with
//! the notifications, statuses, outputs or processes that show it.
//!
//! The judgement is the runner's, from what it saw; the scenario says what to do and what
//! the commands do (their exit codes, outputs), and so what must follow:
//!
//! - B1: every final status seen for a task (a read's status, a kill's answer, the
//!   notification) is the same one, and no read shows a task going back from final;
//! - B2: a task that ended (or was killed) has exactly one notification; one still running
//!   has none;
//! - B3: that notification's status is what happened (killed when its kill answered
//!   killed, the status a kill answered already final with, else completed for exit 0 and
//!   failed otherwise), with that exit code when it gives one and the output file spawn
//!   named;
//! - B4: reads from the consumed offset move on by exactly what they return and add up to
//!   what the command wrote, which is also what the output file holds;
//! - B5: no kill or read answers "not found" for a task before its notification was
//!   collected;
//! - B6: ids have the seed's form, differ, are random (letters occur), and the output file
//!   is the task's own inside the session's folder;
//! - B7: after a kill, an `orphans` step, and the session's end (exit or SIGKILL), no process
//!   of any task's group is alive (read from /proc);
//! - B8: a flooding task is stopped within the cap.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::procs::{self, Member};
use crate::runner::is_seed_id;
use crate::scenario::{BgScenario, EndHow, KillExpect, Step};
use crate::targets::{BgOpen, BgTarget};
use taskproof_core::protocol::Hello;
use taskproof_core::rule::Rule;
use taskproof_model::model_log::LogHandle;
use taskproof_profile::{Profile, RunProfile};
use taskproof_report::Event;
use taskproof_report::result::{
    Outcome, ScenarioResult, StepFailure, SuiteResult, TargetFailure, TargetInfo,
};
use taskproof_session::background::{
    BgEnd, BgError, BgKill, BgNotification, BgSession, BgStatus, BgWork,
};

/// How long processes get to disappear after a kill or the end before they count as
/// orphans.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(3);

/// How long the final collection waits for late (second) notifications after every task
/// had one.
pub const SETTLE: Duration = Duration::from_millis(500);

/// Rule Bn.
fn b(n: usize) -> Rule {
    Rule::BACKGROUND[n - 1]
}

/// How a background suite runs.
#[derive(Debug, Clone)]
pub struct BgConfig {
    pub target: BgTarget,
    pub open: BgOpen,
    /// A folder for the scripted model's log of each scenario (`ID.jsonl`), for targets
    /// driven by one (Claude Code).
    pub model_log: Option<PathBuf>,
}

/// What the runner knows of one task.
#[derive(Debug)]
struct Track {
    name: String,
    id: String,
    output_file: Option<PathBuf>,
    exit: Option<i32>,
    ends: bool,
    flood: bool,
    expected_output: Option<String>,
    kill: Option<(usize, BgKill)>,
    /// Every final status seen: (where, status).
    finals: Vec<(String, BgStatus)>,
    /// Every status a read reported, in order.
    seen: Vec<(usize, BgStatus)>,
    offset: u64,
    consumed: String,
    /// Started by a `race` step.
    in_race: bool,
    /// Its command was started (not held in pending, or a `start` step started it).
    started: bool,
}

struct Run<'a> {
    scenario: &'a BgScenario,
    folder: PathBuf,
    session: Box<dyn BgSession>,
    tasks: Vec<Track>,
    by_name: BTreeMap<String, usize>,
    notes: Vec<BgNotification>,
    failures: Vec<StepFailure>,
    remarks: Vec<String>,
    ended: bool,
}

/// Why a scenario stopped before its verdict.
enum Stop {
    Skip(String),
    Target(Option<usize>, String),
}

type Res<T> = Result<T, Stop>;

fn target_err(step: Option<usize>) -> impl Fn(BgError) -> Stop {
    move |e| Stop::Target(step, e.to_string())
}

impl Run<'_> {
    fn fail(
        &mut self,
        step: Option<usize>,
        rule: usize,
        reason: String,
        expected: Value,
        actual: Value,
    ) {
        // The final checks read with the step index usize::MAX: they belong to no step.
        let step = step.filter(|i| *i != usize::MAX);
        self.failures.push(StepFailure {
            step,
            session: None,
            request: None,
            expected,
            actual,
            reason,
            rules: vec![b(rule)],
            note: None,
            step_json: step.and_then(|i| step_json(self.scenario, i)),
            witness: None,
        });
    }

    fn task(&self, name: &str) -> usize {
        self.by_name[name]
    }

    fn notified(&self, id: &str) -> Vec<&BgNotification> {
        self.notes.iter().filter(|n| n.id == id).collect()
    }

    /// Whether task `id` was notified by now: collected, or delivered by the target on its
    /// own with the very answer that says the task is gone (Claude Code hands the model the
    /// notification in the same turn). A notification still waiting to be collected does
    /// not count: evicting its task first is the bug B5 names.
    fn notified_by_now(&mut self, id: &str) -> bool {
        !self.notified(id).is_empty() || self.session.delivered().iter().any(|n| n.id == id)
    }

    fn spawn(&mut self, i: usize, name: String, sp: &super::scenario::Spawn) -> Res<()> {
        let work = BgWork {
            command: sp.command(),
        };
        let started = if sp.hold {
            match self
                .session
                .spawn_held(&work)
                .map_err(target_err(Some(i)))?
            {
                Some(s) => s,
                None => {
                    return Err(Stop::Skip(
                        "the target cannot hold a task in pending, so a kill before start cannot be arranged".into(),
                    ));
                }
            }
        } else {
            self.session.spawn(&work).map_err(target_err(Some(i)))?
        };
        self.check_id(i, &started.id, started.output_file.as_deref());
        self.by_name.insert(name.clone(), self.tasks.len());
        self.tasks.push(Track {
            name,
            id: started.id,
            output_file: started.output_file,
            exit: sp.command.is_none().then(|| sp.exit.unwrap_or(0)),
            ends: sp.ends(),
            flood: sp.flood.is_some(),
            expected_output: sp.expected_output(),
            kill: None,
            finals: Vec::new(),
            seen: Vec::new(),
            offset: 0,
            consumed: String::new(),
            in_race: false,
            started: !sp.hold,
        });
        Ok(())
    }

    /// B6: the id's form, its uniqueness, and its output file.
    fn check_id(&mut self, i: usize, id: &str, file: Option<&Path>) {
        if !is_seed_id(id) {
            self.fail(
                Some(i),
                6,
                format!("the id {id:?} is not a type letter and eight of [0-9a-z]"),
                json!("a letter and 8 of [0-9a-z]"),
                json!(id),
            );
        }
        if self.tasks.iter().any(|t| t.id == id) {
            self.fail(
                Some(i),
                6,
                format!("the id {id:?} was given to an earlier task too"),
                json!("a new id"),
                json!(id),
            );
        }
        if let Some(f) = file {
            let root = self
                .session
                .output_root()
                .unwrap_or_else(|| self.folder.clone());
            let inside = f.starts_with(&root)
                && f.components()
                    .all(|c| !matches!(c, std::path::Component::ParentDir));
            let own = f
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(id));
            if !inside || !own {
                self.fail(
                    Some(i),
                    6,
                    format!(
                        "task {id}'s output file {} is not its own file inside the target's output folder {}",
                        f.display(),
                        root.display()
                    ),
                    json!(format!("{}/…{id}…", root.display())),
                    json!(f),
                );
            }
        }
    }

    fn read(&mut self, i: usize, t: usize, all: bool) -> Res<Option<(String, Option<BgStatus>)>> {
        let mut text = String::new();
        let mut status = None;
        loop {
            let (id, offset) = (self.tasks[t].id.clone(), self.tasks[t].offset);
            let out = match self.session.output(&id, offset) {
                Ok(o) => o,
                Err(e) => match e {
                    BgError::NoSuchTask(words) => {
                        if !self.notified_by_now(&id) {
                            self.fail(
                                Some(i),
                                5,
                                format!(
                                    "reading task {id}'s output answered not found ({words:?}) before its notification was collected: it was evicted too early"
                                ),
                                json!("the output"),
                                json!({"not_found": words}),
                            );
                        } else {
                            self.remarks.push(format!(
                                "{}: task {id} was evicted after its notification was collected; its output is no longer read by id",
                                step_words(i)
                            ));
                        }
                        return Ok(None);
                    }
                    e => return Err(Stop::Target(Some(i), e.to_string())),
                },
            };
            let len = out.text.len() as u64;
            if let Some(next) = out.next_offset
                && next != offset + len
            {
                self.fail(
                    Some(i),
                    4,
                    format!(
                        "a read of task {id} from offset {offset} returned {len} bytes but gave the next offset as {next}"
                    ),
                    json!(offset + len),
                    json!(next),
                );
            }
            let moved_on = out.next_offset.is_none_or(|n| n > offset) || len == 0;
            if !moved_on {
                self.fail(
                    Some(i),
                    4,
                    format!(
                        "a read of task {id} from offset {offset} returned {len} bytes but did not move the offset on (next offset {:?})",
                        out.next_offset
                    ),
                    json!(format!("more than {offset}")),
                    json!(out.next_offset),
                );
            }
            let tr = &mut self.tasks[t];
            tr.offset = out.next_offset.unwrap_or(offset + len).max(offset);
            tr.consumed.push_str(&out.text);
            text.push_str(&out.text);
            if let Some(s) = out.status {
                tr.seen.push((i, s));
                if s.is_final() {
                    tr.finals.push((format!("{} read", step_words(i)), s));
                }
                status = Some(s);
            }
            // A read-all ends at an empty read, or when reads stop moving on (judged above).
            if !all || out.text.is_empty() || !moved_on {
                break;
            }
        }
        Ok(Some((text, status)))
    }

    fn kill(&mut self, i: usize, t: usize) -> Res<BgKill> {
        let id = self.tasks[t].id.clone();
        let answer = self.session.kill(&id).map_err(target_err(Some(i)))?;
        let tr = &mut self.tasks[t];
        match &answer {
            BgKill::Killed => tr
                .finals
                .push((format!("steps[{i}] kill answer"), BgStatus::Killed)),
            BgKill::AlreadyFinal(s) => tr.finals.push((format!("steps[{i}] kill answer"), *s)),
            BgKill::NotFound(m) => {
                if !self.notified_by_now(&id) {
                    let m = m.clone();
                    self.fail(
                        Some(i),
                        5,
                        format!(
                            "the kill of task {id} answered not found ({m:?}) before its notification was collected (anthropics/claude-code#43078)"
                        ),
                        json!("killed or already final"),
                        json!({"not_found": m}),
                    );
                }
            }
        }
        self.tasks[t].kill = Some((i, answer.clone()));
        Ok(answer)
    }

    /// B7: no process of any task group alive after `grace`; survivors are killed here so
    /// that the harness leaves nothing behind.
    fn orphans(&mut self, step: Option<usize>, pgids: &[i32], grace: Duration, when: &str) {
        let started = self.tasks.iter().any(|t| t.started);
        if pgids.is_empty() && started {
            self.remarks.push(format!(
                "B7 not checked {when}: the target names no process group of its tasks (task_pids)"
            ));
            return;
        }
        let alive = procs::survivors_after(pgids, grace);
        if !alive.is_empty() {
            let list: Vec<String> = alive.iter().map(Member::to_string).collect();
            self.fail(
                step,
                7,
                format!(
                    "{} process(es) of the tasks are alive {grace:?} {when}: {}",
                    alive.len(),
                    list.join("; ")
                ),
                json!([]),
                json!(list),
            );
            kill_groups(&alive);
        }
    }

    fn step(&mut self, i: usize, step: &Step, target: &BgTarget) -> Res<()> {
        match step {
            Step::Spawn(sp) => {
                for name in sp.names() {
                    self.spawn(i, name, sp)?;
                }
            }
            Step::Start(name) => {
                let t = self.task(name);
                let id = self.tasks[t].id.clone();
                self.session.start(&id).map_err(target_err(Some(i)))?;
                self.tasks[t].started = true;
            }
            Step::Kill(k) => {
                let t = self.task(&k.task);
                let answer = self.kill(i, t)?;
                if let Some(want) = k.expect {
                    let ok = matches!(
                        (want, &answer),
                        (KillExpect::Killed, BgKill::Killed)
                            | (KillExpect::AlreadyFinal, BgKill::AlreadyFinal(_))
                            | (KillExpect::NotFound, BgKill::NotFound(_))
                    );
                    // A not-found answer was judged (B5) by `kill` already.
                    if !ok && !matches!(answer, BgKill::NotFound(_)) {
                        let id = self.tasks[t].id.clone();
                        self.fail(
                            Some(i),
                            1,
                            format!("the kill of task {id} answered {answer:?}, not {want:?}"),
                            json!(format!("{want:?}")),
                            json!(format!("{answer:?}")),
                        );
                    }
                }
            }
            Step::Pause(s) => std::thread::sleep(Duration::from_secs_f64(*s)),
            Step::Read(r) => {
                let t = self.task(&r.task);
                let mut got = self.read(i, t, r.all)?;
                if let Some(secs) = r.until_final.or(r.until_output) {
                    let deadline = Instant::now() + Duration::from_secs_f64(secs);
                    let mut text = String::new();
                    while let Some((more, status)) = got.take() {
                        text.push_str(&more);
                        let done = if r.until_final.is_some() {
                            status.is_none_or(BgStatus::is_final)
                        } else {
                            !text.is_empty()
                        };
                        if done || Instant::now() >= deadline {
                            got = Some((text, status));
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                        got = self.read(i, t, r.all)?;
                    }
                }
                if let Some((text, status)) = got {
                    let id = self.tasks[t].id.clone();
                    if let Some(want) = &r.expect
                        && *want != text
                    {
                        self.fail(
                            Some(i),
                            4,
                            format!("a read of task {id} returned {text:?}, not {want:?}"),
                            json!(want),
                            json!(text),
                        );
                    }
                    if let (Some(want), Some(got)) = (r.status, status)
                        && want != got
                    {
                        self.fail(
                            Some(i),
                            1,
                            format!("task {id} is {got:?} where it must be {want:?}"),
                            json!(want),
                            json!(got),
                        );
                    }
                }
            }
            Step::Wait(s) => {
                self.notes = self
                    .session
                    .notifications(Duration::from_secs_f64(*s))
                    .map_err(target_err(Some(i)))?;
            }
            Step::Orphans(g) => {
                let pgids = self.session.task_pids().map_err(target_err(Some(i)))?;
                self.orphans(
                    Some(i),
                    &pgids,
                    Duration::from_secs_f64(*g),
                    "after the tasks ended",
                );
            }
            Step::Race(r) => self.race(i, r)?,
            Step::End(how) => {
                if *how == EndHow::Sigkill && !target.can_sigkill() {
                    return Err(Stop::Skip(format!(
                        "{target} runs in taskproof's own process, which cannot be SIGKILLed and go on"
                    )));
                }
                let pgids = self.session.task_pids().map_err(target_err(Some(i)))?;
                let how = match how {
                    EndHow::Exit => BgEnd::Exit,
                    EndHow::Sigkill => BgEnd::Sigkill,
                };
                self.session.end(how).map_err(target_err(Some(i)))?;
                self.ended = true;
                let when = match how {
                    BgEnd::Exit => "after the session ended",
                    BgEnd::Sigkill => "after the session was SIGKILLed",
                };
                self.orphans(Some(i), &pgids, ORPHAN_GRACE, when);
            }
        }
        Ok(())
    }

    /// The kill/complete race: task k sleeps `sleep` s and is killed `sleep + (k - n/2) ×
    /// step` s after its spawn returned.
    fn race(&mut self, i: usize, r: &super::scenario::Race) -> Res<()> {
        let sp = super::scenario::Spawn {
            name: r.name.clone(),
            count: None,
            print: None,
            print_stderr: None,
            sleep: Some(r.sleep),
            exit: Some(0),
            tree: false,
            forever: false,
            flood: None,
            hold: false,
            command: None,
            expect_output: None,
        };
        let mut plan = Vec::new();
        for k in 0..r.count {
            self.spawn(i, format!("{}#{k}", r.name), &sp)?;
            if let Some(last) = self.tasks.last_mut() {
                last.in_race = true;
            }
            let at = Instant::now()
                + Duration::from_secs_f64(
                    (r.sleep + (k as f64 - r.count as f64 / 2.0) * r.step).max(0.0),
                );
            plan.push((at, self.tasks.len() - 1));
        }
        plan.sort();
        for (at, t) in plan {
            if let Some(d) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            self.kill(i, t)?;
        }
        Ok(())
    }
}

/// SIGKILL to each survivor's group.
fn kill_groups(alive: &[Member]) {
    let mut groups: Vec<i32> = alive.iter().map(|m| m.pgid).collect();
    groups.sort();
    groups.dedup();
    for g in groups {
        if let Some(pid) = rustix::process::Pid::from_raw(g).filter(|_| g > 1) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

fn step_json(s: &BgScenario, i: usize) -> Option<Value> {
    let text = std::fs::read_to_string(&s.file).ok().or_else(|| {
        super::scenario::BUILTIN
            .iter()
            .find(|(p, _)| Path::new(p) == s.file)
            .map(|(_, t)| t.to_string())
    })?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.get("steps")?.get(i).cloned()
}

/// Runs one scenario on a fresh folder.
pub fn run_scenario(s: &BgScenario, config: &BgConfig) -> ScenarioResult {
    let started = Instant::now();
    let result = run_inner(s, config);
    let (result, notes) = match result {
        Ok((failures, notes)) if failures.is_empty() => (Ok(Outcome::Pass), notes),
        Ok((failures, notes)) => (Ok(Outcome::Fail(failures)), notes),
        Err(Stop::Skip(why)) => (Ok(Outcome::Skip(why)), Vec::new()),
        Err(Stop::Target(step, message)) => (
            Err(TargetFailure {
                step,
                request: None,
                message,
            }),
            Vec::new(),
        ),
    };
    ScenarioResult {
        id: s.id.clone(),
        title: s.title.clone(),
        file: s.file.clone(),
        source: Some(s.source.clone()),
        rules: s.rules.clone(),
        result,
        stderr: String::new(),
        notes,
        target_notes: Vec::new(),
        skipped_steps: Vec::new(),
        step_count: s.steps.len(),
        time_dependent: Vec::new(),
        steps: Vec::new(),
        elapsed: started.elapsed(),
    }
}

fn run_inner(s: &BgScenario, config: &BgConfig) -> Res<(Vec<StepFailure>, Vec<String>)> {
    let dir = tempfile::Builder::new()
        .prefix("taskproof-bg-")
        .tempdir()
        .map_err(|e| Stop::Target(None, format!("failed to make a session folder: {e}")))?;
    let folder = std::fs::canonicalize(dir.path())
        .map_err(|e| Stop::Target(None, format!("failed to resolve the session folder: {e}")))?;
    let open = BgOpen {
        output_cap: s.output_cap,
        model_log: config.model_log.as_ref().map(|dir| {
            LogHandle::new(
                dir.join(format!("{}.jsonl", s.id)),
                &config.target.to_string(),
                &s.id,
            )
        }),
        ..config.open.clone()
    };
    let session = config
        .target
        .open(&folder, open)
        .map_err(|e| Stop::Target(None, format!("failed to open a session: {e}")))?;
    if let Some(cap) = s.output_cap
        && session.output_cap() != Some(cap)
    {
        return Err(Stop::Skip(format!(
            "the scenario needs an output cap of {cap} bytes; the target's is {}",
            session
                .output_cap()
                .map_or("unknown".to_string(), |c| c.to_string())
        )));
    }
    let mut run = Run {
        scenario: s,
        folder,
        session,
        tasks: Vec::new(),
        by_name: BTreeMap::new(),
        notes: Vec::new(),
        failures: Vec::new(),
        remarks: Vec::new(),
        ended: false,
    };
    let outcome = (|| -> Res<()> {
        for (i, step) in s.steps.iter().enumerate() {
            run.step(i, step, &config.target)?;
        }
        if !run.ended {
            let within = Duration::from_secs_f64(s.final_wait.unwrap_or(10.0));
            run.session
                .notifications(within)
                .map_err(target_err(None))?;
            // The wait returns once every task has a notification; a second one (B2) comes
            // after the first, so collect once more after a pause.
            std::thread::sleep(SETTLE);
            run.notes = run
                .session
                .notifications(Duration::ZERO)
                .map_err(target_err(None))?;
        }
        run.judge(s.output_cap)?;
        if !run.ended {
            let pgids = run.session.task_pids().map_err(target_err(None))?;
            run.session.end(BgEnd::Exit).map_err(target_err(None))?;
            run.ended = true;
            run.orphans(None, &pgids, ORPHAN_GRACE, "after the session ended");
        }
        Ok(())
    })();
    if outcome.is_err() {
        // Whatever happened, leave no task behind.
        let pgids = run.session.task_pids().unwrap_or_default();
        let _ = run.session.end(BgEnd::Sigkill);
        kill_groups(&procs::members_of(&pgids));
    }
    outcome?;
    run.remarks.extend(run.session.remarks());
    let mut failures = run.failures;
    failures.sort_by_key(|f| f.step.unwrap_or(usize::MAX));
    Ok((failures, run.remarks))
}

/// Runs the scenarios one after another (they time kills and completions, so they do not
/// share the machine with each other) and reports each through `emit`.
pub fn run_suite(
    scenarios: &[BgScenario],
    config: &BgConfig,
    emit: &mut dyn FnMut(&Event<'_>),
) -> SuiteResult {
    let started = Instant::now();
    let hello = {
        let dir = tempfile::tempdir();
        match dir {
            Ok(d) => match config.target.open(d.path(), config.open.clone()) {
                Ok(mut s) => {
                    let _ = s.end(BgEnd::Exit);
                    Ok(Hello {
                        protocol: 1,
                        name: "background-task target".into(),
                        version: config.target.to_string(),
                        layout: taskproof_core::layout::Layout::Opaque,
                        features: Default::default(),
                        mapping: Default::default(),
                    })
                }
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(format!("failed to make a scratch folder: {e}")),
        }
    };
    let target = TargetInfo {
        spec: config.target.to_string(),
        // A background target of Claude Code takes no configuration: it runs the default.
        configuration: match &config.target {
            crate::targets::BgTarget::ClaudeCode(cc) => Some(cc.config.name().to_string()),
            _ => None,
        },
        hello,
        stderr: String::new(),
    };
    let profile = RunProfile::from(Profile::Strict);
    emit(&Event::RunStarted {
        target: &target,
        profile: &profile,
        total: if target.hello.is_ok() {
            scenarios.len()
        } else {
            0
        },
    });
    let mut results = Vec::new();
    if target.hello.is_ok() {
        for (k, s) in scenarios.iter().enumerate() {
            let r = run_scenario(s, config);
            emit(&Event::ScenarioFinished {
                result: &r,
                done: k + 1,
                total: scenarios.len(),
            });
            results.push(r);
        }
    }
    results.sort_by(|a, b| a.id.cmp(&b.id));
    let suite = SuiteResult {
        target,
        profile,
        scenarios: results,
        elapsed: started.elapsed(),
        starts: None,
    };
    emit(&Event::RunFinished { suite: &suite });
    suite
}

/// How a remark names step `i`; the final checks after the last step read with
/// `usize::MAX`.
fn step_words(i: usize) -> String {
    if i == usize::MAX {
        "after the last step".to_string()
    } else {
        format!("steps[{i}]")
    }
}

mod judge;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BgMutant;
    use crate::scenario::load_builtin;

    fn run(target: BgTarget, id: &str) -> ScenarioResult {
        let all = load_builtin().unwrap();
        let s = all.iter().find(|s| s.id == id).unwrap();
        run_scenario(
            s,
            &BgConfig {
                target,
                open: BgOpen::default(),
                model_log: None,
            },
        )
    }

    #[test]
    fn the_in_process_reference_passes_the_kill_and_completion_scenarios() {
        for id in [
            "completion",
            "failure",
            "kill-while-running",
            "kill-after-completion",
        ] {
            let r = run(BgTarget::InProcess(None), id);
            assert!(
                matches!(r.result, Ok(Outcome::Pass)),
                "{id}: {:?}",
                r.result
            );
        }
    }

    #[test]
    fn in_process_mutants_fail_their_rules() {
        for (m, id) in [
            (BgMutant::DoubleNotify, "kill-while-running"),
            (BgMutant::StatusNotFinal, "kill-while-running"),
            (BgMutant::KillNoCleanup, "kill-while-running"),
            (BgMutant::FailureNotifiedAsSuccess, "failure"),
            (BgMutant::EvictEarly, "kill-after-completion"),
        ] {
            let r = run(BgTarget::InProcess(Some(m)), id);
            assert!(
                r.failed_rules().contains(&m.rule()),
                "{m} on {id}: {:?}",
                r.result
            );
        }
    }
}
