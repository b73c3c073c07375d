//! The step interpreter: replays one scenario's steps against a target and judges every
//! answer.
//!
//! A scenario stops at its first failing step (later steps would judge a state the scenario
//! did not mean to reach) unless the run keeps going ([`RunConfig::keep_going`]), and a
//! failing step marked as a precondition skips the scenario instead. Against a target whose
//! layout is opaque, the steps [`opaque_skips`] names are skipped and the rest runs.
//! Concurrent blocks are run by [`super::lanes`], file steps' paths and checks by
//! [`super::files`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::files::write_creating;
use super::format::*;
use super::gate::{opaque_skips, skip_reason};
use super::sandbox::Sandbox;
use super::suite::{Prepared, RunConfig};
use super::vars::{self, Vars};
use crate::graph::{Graph, completed_words, cycle_words, task_name};
use crate::profile::recorded::{Judged as Held, StepKey};
use crate::profile::{Mode, Profile, observe};
use crate::protocol::{Answer, Response};
use crate::report::result::{
    Outcome, StepFailure, StepRecord, StepSkip, StepVerdict, TargetFailure, TargetInfo,
};
use crate::rule::Rule;
use crate::target::{Session, TargetError};
use crate::task::{Task, TaskId};

/// A judged scenario: its outcome, its sessions' stderr, its notes, the steps skipped and
/// the record of each judged request.
pub(super) type Judged = (
    Result<Outcome, TargetFailure>,
    String,
    Vec<String>,
    Vec<StepSkip>,
    Vec<StepRecord>,
);

pub(super) fn judge(
    s: &Scenario,
    config: &RunConfig,
    target: &TargetInfo,
    prepared: Option<Prepared>,
    observed: &mut Observed,
) -> Judged {
    let nothing = |result| (result, String::new(), Vec::new(), Vec::new(), Vec::new());
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
        steps: Vec::new(),
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
    (result, run.stderr(), run.notes, skipped, run.steps)
}

/// Why a scenario stopped early.
pub(super) enum Stop {
    Fail(Box<StepFailure>),
    Error(TargetFailure),
}

/// One running scenario.
pub(super) struct Run<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) config: &'a RunConfig,
    pub(super) layout: crate::protocol::Layout,
    pub(super) sandbox: Sandbox,
    pub(super) sessions: BTreeMap<String, Box<dyn Session>>,
    /// Sessions opened ahead that failed to start: the error is reported where the
    /// scenario first uses the session, as if it had been opened there.
    pub(super) failed_opens: BTreeMap<String, (TargetError, String)>,
    /// Stderr of sessions that already ended, labelled.
    pub(super) ended: Vec<(String, String)>,
    pub(super) vars: Vars,
    pub(super) notes: Vec<String>,
    /// Every judged request so far.
    pub(super) steps: Vec<StepRecord>,
    /// [recorded profiles] What the current step showed, when it did not behave as strict
    /// expects and the step itself can say more than "it failed" (set only when observing).
    pub(super) observation: Option<Value>,
}

/// The most stderr kept per session for the report, from the end.
const STDERR_TAIL: usize = 4096;

impl Run<'_> {
    fn rules(&self, step: &Step) -> Vec<Rule> {
        step.rules
            .clone()
            .unwrap_or_else(|| self.scenario.rules.clone())
    }

    pub(super) fn fail(
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

    pub(super) fn target_error(step: &Step, request: Option<Value>, message: String) -> Stop {
        Stop::Error(TargetFailure {
            step: Some(step.index),
            request,
            message,
        })
    }

    /// The named session, opened on first use.
    pub(super) fn session(
        &mut self,
        step: &Step,
        name: &str,
    ) -> Result<&mut Box<dyn Session>, Stop> {
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
    pub(super) fn end(&mut self, name: &str, kill: bool) -> Result<(), TargetError> {
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
            rules: vec![Rule::S13],
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
    pub(super) fn unbound(&self, step: &Step, e: impl std::fmt::Display) -> Stop {
        self.fail(
            step,
            None,
            json!("all variables bound"),
            Value::Null,
            e.to_string(),
        )
    }

    pub(super) fn fill(&self, step: &Step, v: &Value) -> Result<Value, Stop> {
        vars::substitute(v, &self.vars).map_err(|e| self.unbound(step, e))
    }

    pub(super) fn fill_text(&self, step: &Step, s: &str) -> Result<String, Stop> {
        vars::substitute_text(s, &self.vars).map_err(|e| self.unbound(step, e))
    }

    /// Sends a request and decodes the answer, which must be protocol-valid for its op.
    pub(super) fn call(
        &mut self,
        step: &Step,
        session: &str,
        request: &Value,
    ) -> Result<Answer, Stop> {
        let s = self.session(step, session)?;
        let answer = s.call(request).map_err(|e| {
            Self::target_error(
                step,
                Some(request.clone()),
                format!("session {session}: {e}"),
            )
        })?;
        Answer::decode(request, answer)
            .map_err(|m| Self::target_error(step, Some(request.clone()), m))
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
                let observing = !matches!(self.config.mode, Mode::Expectations);
                let judged = expect
                    .substitute(&self.vars)
                    .map_err(|e| (expect.to_json(), e.to_string()))
                    .and_then(|e| {
                        let json = e.to_json();
                        if observing {
                            // [recorded profiles] Observed, not judged; later steps bind
                            // as usual.
                            self.observation = observe::send(&e, &answer.json);
                            return Ok(json);
                        }
                        e.judge(&answer.json)
                            .map(|()| json.clone())
                            .map_err(|r| (json, r))
                    });
                self.steps.push(StepRecord {
                    step: step.index,
                    session: step.session.clone(),
                    request: request.clone(),
                    answer: answer.clone(),
                    expected: match &judged {
                        Ok(e) | Err((e, _)) => e.clone(),
                    },
                    verdict: match &judged {
                        Ok(_) => StepVerdict::Pass,
                        Err((_, reason)) => StepVerdict::Fail(reason.clone()),
                    },
                });
                if let Err((expected, reason)) = judged {
                    return Err(self.fail(step, Some(request), expected, answer.json, reason));
                }
                if answer.is_ok() {
                    for (name, path) in bind {
                        match vars::lookup(&answer.json, path) {
                            Some(v) => {
                                self.vars.insert(name.clone(), v.clone());
                            }
                            None => {
                                return Err(self.fail(
                                    step,
                                    Some(request),
                                    json!({ "bind": { name.clone(): path } }),
                                    answer.json,
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
                    serde_json::to_vec_pretty(&crate::layout::to_disk(self.layout, &id, &task))
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

    /// Lists `list` through the step's session and decodes the tasks.
    pub(super) fn listing(
        &mut self,
        step: &Step,
        session: &str,
        list: &str,
    ) -> Result<Vec<Task>, Stop> {
        let request = json!({"op": "list", "list": list});
        match self.call(step, session, &request)? {
            Answer {
                response: Some(Response::Tasks { tasks, .. }),
                ..
            } => Ok(tasks),
            answer => Err(self.fail(
                step,
                Some(request),
                json!({"ok": true}),
                answer.json,
                format!("cannot check list {list}: listing it failed"),
            )),
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
}

/// [recorded profiles] What each step showed, by step: its own rules, what strict expects
/// and the observation (`crate::profile::observe`).
pub(super) type Observed = BTreeMap<StepKey, crate::profile::recorded::Observed>;

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
            _ => Held::Holds,
        };
        let shown = obs.clone().unwrap_or_else(|| json!("as strict expects"));
        observed.insert(key, (rules, strict, obs));
        match verdict {
            Held::Holds => None,
            Held::NotJudged(note) => {
                self.notes.push(note);
                None
            }
            Held::Differs { recorded, reason } => Some(StepFailure {
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
                rules: step.map_or_else(|| vec![Rule::S13], |s| self.rules(s)),
                note: step.and_then(|s| s.note.clone()),
                step_json: step.map(|s| s.raw.clone()),
            }),
        }
    }
}

/// What breaks `inv` in the graph, in words.
pub(super) fn violations(g: &Graph, inv: Invariant) -> Vec<String> {
    let label = inv.as_str();
    let words: Vec<String> = match inv {
        Invariant::Acyclic => g.cycles().iter().map(|c| cycle_words(c)).collect(),
        Invariant::Mirrored => g.half_edges().iter().map(|h| h.words(task_name)).collect(),
        Invariant::NoDangling => g.dangling().iter().map(|d| d.words()).collect(),
        Invariant::CompletedBlockers => g
            .completed_with_unfinished_blockers()
            .iter()
            .map(|(t, bs)| completed_words(*t, bs))
            .collect(),
        Invariant::UniqueIds => g
            .duplicate_ids()
            .iter()
            .map(|id| format!("id {id} is listed more than once"))
            .collect(),
    };
    words.into_iter().map(|w| format!("{label}: {w}")).collect()
}
