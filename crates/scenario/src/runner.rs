//! Running one scenario: what gates it (profile, features, opaque layouts), its sessions
//! and sandbox, the loop over its steps, and its outcome. What each step does is the step
//! interpreter's ([`super::interpret`]); observing steps for recorded profiles is
//! [`super::observing`]'s.
//!
//! A scenario stops at its first failing step (later steps would judge a state the scenario
//! did not mean to reach) unless the run keeps going ([`RunConfig::keep_going`]), and a
//! failing step marked as a precondition skips the scenario instead. Against a target whose
//! layout is opaque, the steps [`opaque_skips`] names are skipped and the rest runs.
//! Concurrent blocks are run by [`super::lanes`], file steps' paths and checks by
//! [`super::files`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::finding;
use crate::format::*;
use crate::gate::{admit, hidden_edges_view, opaque_skips, read_modify_write};
use crate::sandbox::Sandbox;
use crate::suite::{Prepared, RunConfig};
use crate::vars::{self, Vars};
use taskproof_core::protocol::{ATOMIC, Answer};
use taskproof_core::rule::Rule;
use taskproof_model::model_log::LogHandle;
use taskproof_profile::recorded::StepKey;
use taskproof_profile::{Mode, observe};
use taskproof_report::result::{
    EventWitness, Outcome, StepFailure, StepRecord, StepSkip, TargetFailure, TargetInfo,
};
use taskproof_session::{Session, SessionOptions, TargetError};

/// A judged scenario: its outcome, its sessions' stderr, its notes, the steps skipped, the
/// record of each judged request, and its notes about the target rather than the scenario
/// (`ScenarioResult::target_notes`).
pub(super) type Judged = (
    Result<Outcome, TargetFailure>,
    String,
    Vec<String>,
    Vec<StepSkip>,
    Vec<StepRecord>,
    Vec<String>,
);

pub(super) fn judge(
    s: &Scenario,
    config: &RunConfig,
    target: &TargetInfo,
    prepared: Option<Prepared>,
    observed: &mut Observed,
) -> Judged {
    let nothing = |result| {
        (
            result,
            String::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        )
    };
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
                Vec::new(),
            );
        }
    };
    // Steps that need a part the target does not declare: the run stops before the first.
    let undeclared = match admit(s, config.profile, hello) {
        Ok(undeclared) => undeclared,
        Err(outcome) => return nothing(Ok(outcome)),
    };
    let not_judged_from = undeclared.iter().filter_map(|(_, at)| *at).min();
    // [recorded profiles] A scenario the profile recorded as skipped (or broken) is skipped.
    if let Mode::Hold(p) = &config.mode
        && let Some(reason) = p.skip_reason(&s.id)
    {
        return nothing(Ok(Outcome::Skip(reason)));
    }
    let mut step_skips = match hello.layout {
        taskproof_core::protocol::Layout::Opaque => opaque_skips(s, config.profile),
        _ => BTreeMap::new(),
    };
    // Dependencies written but never shown: judged on the answers alone.
    let hidden;
    let s = if hello.has(taskproof_core::protocol::Feature::HiddenEdges) {
        let (view, skips) = hidden_edges_view(s, config.profile);
        for (i, why) in skips {
            step_skips.entry(i).or_insert(why);
        }
        hidden = view;
        &hidden
    } else {
        s
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
                options: config.options_for(s),
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
        options: prepared.options,
        sessions: BTreeMap::new(),
        failed_opens: BTreeMap::new(),
        ended: Vec::new(),
        vars: Vars::new(),
        notes: Vec::new(),
        target_notes: Vec::new(),
        steps: Vec::new(),
        observation: None,
        suspended: BTreeMap::new(),
        last_event: None,
        timeline: Vec::new(),
        started: std::time::Instant::now(),
        sent: Vec::new(),
    };
    let delay = |index: usize| config.delays.get(&(s.id.clone(), index)).copied();
    let timeline = s.steps_for(config.profile).any(|st| {
        matches!(
            st.action,
            Action::Wait(_) | Action::Event { .. } | Action::Kill(_)
        ) || delay(st.index).is_some()
    });
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
    let mut stopped_before_undeclared = false;
    for step in s.steps_for(config.profile) {
        if not_judged_from.is_some_and(|from| step.index >= from) {
            stopped_before_undeclared = true;
            // Which of its requests the target reads and then writes, and how (its `atomic`).
            let rmw = read_modify_write(step, hello);
            if !rmw.is_empty() {
                run.notes.push(format!(
                    "steps[{}] (a concurrent block) is not judged: the target performs {} by \
                     reading a task and then writing it in separate steps, so a change one lane \
                     makes between another lane's read and write can be lost by the way the \
                     store is reached, not by the store{}",
                    step.index,
                    rmw.join(", "),
                    hello
                        .mapping
                        .get(ATOMIC)
                        .map(|why| format!(
                            "; its hello says why: {}",
                            why.strip_prefix("no: ").unwrap_or(why)
                        ))
                        .unwrap_or_default()
                ));
            }
            break;
        }
        if let Some(reason) = step_skips.get(&step.index) {
            skipped.push(StepSkip {
                step: step.index,
                reason: reason.clone(),
            });
            continue;
        }
        run.observation = None;
        if let Some(d) = delay(step.index) {
            // The run's own idle time before this step, witnessed like a `wait` step.
            run.mark_event(
                step,
                format!("idle {} s before it (record's time probe)", d.as_secs_f64()),
            );
            std::thread::sleep(d);
        }
        if let Some(wire) = &run.options.wire {
            wire.step(step.index, crate::export::action_word(&step.action));
        }
        let stepped = run.step(step);
        if timeline {
            run.note_files(step);
        }
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
    } else if stopped_before_undeclared {
        // Every step before it passed; what it and the rest would show is not judged. What
        // escaped the root so far is judged all the same.
        match run.close_all() {
            Err(e) => Err(e),
            Ok(()) => {
                let escapes: Vec<StepFailure> = run.escapes().into_iter().collect();
                if escapes.is_empty() {
                    Ok(Outcome::NotJudged(undeclared))
                } else {
                    Ok(Outcome::Fail(escapes))
                }
            }
        }
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
    // Every session is closed or killed: the model log is whole.
    if let Some(Err(e)) = run.options.model_log.as_ref().map(LogHandle::finish) {
        run.notes.push(e);
    }
    // And so is the wire log: a failure is exported for the target's maintainer.
    if let (Some(dir), Some(wire)) = (&config.export, &run.options.wire)
        && matches!(result, Ok(Outcome::Fail(_)) | Err(_))
    {
        let events = wire.events();
        let failed = crate::export::Failed {
            scenario: s,
            profile: config.profile,
            target,
            result: &result,
            events: &events,
            profile_flag: match &config.mode {
                Mode::Hold(r) => r.name.clone(),
                _ if config.profile == taskproof_profile::Profile::Strict => "strict".into(),
                _ => format!("written:{}", config.profile),
            },
            stderr: &run.stderr(),
        };
        run.notes.push(match crate::export::write(dir, &failed) {
            Ok(readme) => format!("exported for its maintainer: {}", readme.display()),
            Err(e) => format!("--export: not written: {e}"),
        });
    }
    (
        result,
        run.stderr(),
        run.notes,
        skipped,
        run.steps,
        run.target_notes,
    )
}

/// Why a scenario stopped early.
pub(super) enum Stop {
    Fail(Box<StepFailure>),
    Error(TargetFailure),
}

/// [recorded profiles] What each step showed, by step: its own rules, what strict expects
/// and the observation (`taskproof_profile::observe`).
pub(super) type Observed = BTreeMap<StepKey, taskproof_profile::recorded::Observed>;

/// One running scenario.
pub(super) struct Run<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) config: &'a RunConfig,
    pub(super) layout: taskproof_core::protocol::Layout,
    pub(super) sandbox: Sandbox,
    /// What every session of the scenario opens with.
    pub(super) options: SessionOptions,
    pub(super) sessions: BTreeMap<String, Box<dyn Session>>,
    /// Sessions opened ahead that failed to start: the error is reported where the
    /// scenario first uses the session, as if it had been opened there.
    pub(super) failed_opens: BTreeMap<String, (TargetError, String)>,
    /// Stderr of sessions that already ended, labelled.
    pub(super) ended: Vec<(String, String)>,
    pub(super) vars: Vars,
    pub(super) notes: Vec<String>,
    /// Notes about the target that any scenario would get (a wait against a store that does
    /// nothing between requests): the reports say each once per run.
    pub(super) target_notes: Vec<String>,
    /// Every judged request so far.
    pub(super) steps: Vec<StepRecord>,
    /// [recorded profiles] What the current step showed, when it did not behave as strict
    /// expects and the step itself can say more than "it failed" (set only when observing).
    pub(super) observation: Option<Value>,
    /// Sessions that an `exit` or `kill` ended and that keep their conversation for a later
    /// `resume` (agent sessions, see `Session::event`).
    pub(super) suspended: BTreeMap<String, Box<dyn Session>>,
    /// The last session step so far, for the witness of a later failure.
    pub(super) last_event: Option<EventMark>,
    /// In a scenario with session steps: the root's files after each step, for the witness.
    pub(super) timeline: Vec<(usize, std::time::Instant, Vec<String>)>,
    pub(super) started: std::time::Instant,
    /// Every request answered so far, as sent, in order: what a `linearizable` block gives
    /// the profile's model before it searches the block's history.
    pub(super) sent: Vec<Value>,
}

/// A session step and what the root held just before it.
pub(super) struct EventMark {
    event: String,
    at: std::time::Instant,
    files: Vec<String>,
    /// The root's task files just before it, with their bytes (empty when the layout is
    /// opaque), for the finding of a failure after it.
    tasks: BTreeMap<String, Vec<u8>>,
    /// The folder of each session's own list just before it, for the sessions that have one.
    own_lists: BTreeMap<String, String>,
}

/// Every file under `root`, as `path (N B)` relative to it, sorted; folders only through
/// their files, links as `path -> target`.
pub(super) fn files_under(root: &std::path::Path) -> Vec<String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => walk(root, &path, out),
                Ok(m) if m.file_type().is_symlink() => {
                    let to = std::fs::read_link(&path).unwrap_or_default();
                    out.push(format!("{rel} -> {}", to.display()));
                }
                Ok(m) => out.push(format!("{rel} ({} B)", m.len())),
                Err(_) => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// For a step with no `rules` of its own whose request was refused: the rule the refusal
/// breaks. A request the contract accepts breaks the rule its refusal's kind names
/// (`blocked`: S5, `transition`: S4, `cycle`: S7, `dangling`: S6, `conflict`: S20), or for
/// `invalid` and `unsupported` the rule of the request's op (create: S2, update: S11,
/// delete: S10, claim: S20, get and list: S15); a refusal of the wrong kind breaks the rule
/// of the kind the contract gives. The scenario's rules are what its later steps check,
/// which this step never reached (rt09's persistence, after an update refused as
/// `unsupported`).
fn refused_rule(
    step: &Step,
    request: Option<&Value>,
    expected: &Value,
    actual: &Value,
) -> Option<Rule> {
    if step.rules.is_some() {
        return None;
    }
    let (got, wanted) = taskproof_report::result::refused_instead(expected, actual)?;
    let kind = wanted.unwrap_or(got);
    Some(match kind.as_str() {
        "blocked" => Rule::S5,
        "transition" => Rule::S4,
        "cycle" => Rule::S7,
        "dangling" => Rule::S6,
        "conflict" => Rule::S20,
        _ => return request.and_then(refused_request_rule),
    })
}

/// The rule a request breaks when refused for no reason the contract gives it (refused as
/// `unsupported`, `invalid`, …): the rule of what it asked.
fn refused_request_rule(request: &Value) -> Option<Rule> {
    Some(match request.get("op").and_then(Value::as_str)? {
        "create" => Rule::S2,
        // A status change alone that the contract allows, refused: a transition (S4); any
        // other patch refused (a status with fields the target may be refusing): S11.
        "update"
            if request["patch"]
                .as_object()
                .is_some_and(|p| p.len() == 1 && p.contains_key("status")) =>
        {
            Rule::S4
        }
        "update" => Rule::S11,
        "delete" => Rule::S10,
        "claim" => Rule::S20,
        "get" | "list" => Rule::S15,
        _ => return None,
    })
}

/// The most stderr kept per session for the report, from the end.
const STDERR_TAIL: usize = 4096;

impl Run<'_> {
    pub(super) fn rules(&self, step: &Step) -> Vec<Rule> {
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
        let rules = match refused_rule(step, request.as_ref(), &expected, &actual) {
            Some(rule) => vec![rule],
            None => self.rules(step),
        };
        Stop::Fail(Box::new(StepFailure {
            step: Some(step.index),
            session: Some(step.session.clone()),
            request,
            expected,
            actual,
            reason: reason.into(),
            rules,
            note: step.note.clone(),
            step_json: Some(step.raw.clone()),
            witness: self.witness(),
        }))
    }

    /// The witness of what happened between requests, for a failure after a session step.
    pub(super) fn witness(&self) -> Option<EventWitness> {
        let mark = self.last_event.as_ref()?;
        let visible = self.layout != taskproof_core::protocol::Layout::Opaque;
        let now = visible.then(|| files_under(self.sandbox.root()));
        Some(EventWitness {
            event: mark.event.clone(),
            seconds: mark.at.elapsed().as_secs_f64(),
            before: visible.then(|| mark.files.clone()),
            vanished: now
                .as_ref()
                .map(|now| self.vanished(now))
                .unwrap_or_default(),
            after: now,
            finding: None,
        })
    }

    /// For a request that failed after a session step: what became of the tasks it is about
    /// that its list held just before that step (`super::finding`). The list's folder then is
    /// the session's own list as the session knew it just before the step, for `@session`,
    /// and the list's own folder otherwise.
    pub(super) fn finding(
        &self,
        step: &Step,
        request: &Value,
        answer: &Value,
    ) -> Option<taskproof_report::result::Finding> {
        let mark = self.last_event.as_ref()?;
        if self.layout == taskproof_core::protocol::Layout::Opaque {
            return None;
        }
        let about = finding::about(request)?;
        let (before, now) = if finding::names_session_list(request) {
            let now = self.sessions.get(&step.session).and_then(|s| s.own_list());
            (mark.own_lists.get(&step.session)?.clone(), now)
        } else {
            let list = request.get("list").and_then(Value::as_str)?;
            let folder = finding::folder_of(self.layout, list);
            (folder.clone(), Some(folder))
        };
        finding::finding(
            self.layout,
            self.sandbox.root(),
            &mark.tasks,
            &before,
            now.as_deref(),
            &about,
            &finding::shown(answer),
        )
    }

    /// Task files (`*.json`) seen after some step that are not in `now`, each with the
    /// steps between which it went.
    fn vanished(&self, now: &[String]) -> Vec<String> {
        let name = |entry: &str| entry.split(" (").next().unwrap_or(entry).to_string();
        let present: BTreeSet<String> = now.iter().map(|e| name(e)).collect();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (k, (_, _, files)) in self.timeline.iter().enumerate() {
            for f in files {
                let f = name(f);
                if f.ends_with(".json") && !f.contains(" -> ") {
                    seen.insert(f, k);
                }
            }
        }
        let at = |t: std::time::Instant| t.duration_since(self.started).as_secs_f64();
        seen.into_iter()
            .filter(|(f, _)| !present.contains(f))
            .map(|(f, k)| {
                let (step, t, _) = &self.timeline[k];
                let gone = match self.timeline.get(k + 1) {
                    Some((next, t2, _)) => {
                        format!("gone after steps[{next}] (at {:.1} s)", at(*t2))
                    }
                    None => "gone when the failing step was judged".to_string(),
                };
                format!(
                    "{f}: last seen after steps[{step}] (at {:.1} s), {gone}",
                    at(*t)
                )
            })
            .collect()
    }

    /// After a step of a scenario with session steps: what the root holds now.
    pub(super) fn note_files(&mut self, step: &Step) {
        if self.layout != taskproof_core::protocol::Layout::Opaque {
            self.timeline.push((
                step.index,
                std::time::Instant::now(),
                files_under(self.sandbox.root()),
            ));
        }
    }

    /// Notes a session step about to happen, and what the root holds just before it.
    pub(super) fn mark_event(&mut self, step: &Step, words: String) {
        let visible = self.layout != taskproof_core::protocol::Layout::Opaque;
        let own_lists = self
            .sessions
            .iter()
            .chain(&self.suspended)
            .filter_map(|(name, s)| Some((name.clone(), s.own_list()?)))
            .collect();
        self.last_event = Some(EventMark {
            event: format!("steps[{}] {words}", step.index),
            at: std::time::Instant::now(),
            files: files_under(self.sandbox.root()),
            tasks: if visible {
                finding::task_files(self.sandbox.root())
            } else {
                BTreeMap::new()
            },
            own_lists,
        });
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
            // A session that `exit` or `kill` ended and that is used again without `resume`
            // starts afresh: its old conversation is let go.
            if let Some(old) = self.suspended.remove(name) {
                self.ended.push((name.to_string(), old.stderr()));
            }
            let opened = match self.failed_opens.remove(name) {
                Some(failed) => Err(failed),
                None => self
                    .config
                    .target
                    .open_with_stderr(self.sandbox.root(), self.options.clone()),
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

    /// Lets go of the sessions kept for a `resume` that never came, keeping their stderr.
    fn drop_suspended(&mut self) {
        for (name, s) in std::mem::take(&mut self.suspended) {
            self.ended.push((name, s.stderr()));
        }
    }

    /// Kills every session (after a failure there is nothing left to judge).
    fn kill_all(&mut self) {
        self.drop_suspended();
        let names: Vec<String> = self.sessions.keys().cloned().collect();
        for name in names {
            let _ = self.end(&name, true);
        }
    }

    /// Ends every session normally; an adapter that does not exit with status 0 at the end
    /// of its input broke the protocol.
    fn close_all(&mut self) -> Result<(), TargetFailure> {
        self.drop_suspended();
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
            witness: None,
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
        let answer = Answer::decode(request, answer)
            .map_err(|m| Self::target_error(step, Some(request.clone()), m))?;
        self.sent.push(request.clone());
        Ok(answer)
    }
}

#[cfg(test)]
mod refused_tests {
    use super::*;

    /// A refused status change is S4's (shrimp's "a started task cannot go back to
    /// pending", answered unsupported), a refused field change S11's, a refused create S2's.
    #[test]
    fn a_refused_request_breaks_the_rule_of_what_it_asked() {
        let rule = |r: Value| refused_request_rule(&r);
        assert_eq!(
            rule(json!({"op": "update", "id": "1", "patch": {"status": "pending"}})),
            Some(Rule::S4)
        );
        assert_eq!(
            rule(json!({"op": "update", "id": "1", "patch": {"subject": "x"}})),
            Some(Rule::S11)
        );
        assert_eq!(
            rule(
                json!({"op": "update", "id": "1", "patch": {"status": "in_progress", "subject": "x"}})
            ),
            Some(Rule::S11)
        );
        assert_eq!(rule(json!({"op": "create", "task": {}})), Some(Rule::S2));
        assert_eq!(rule(json!({"op": "nope"})), None);
    }
}
