//! The step interpreter: what each action of a scenario sends or does, and how its answer
//! is judged: expectations per profile, listings, graph invariants and the ready set.
//! Concurrent blocks are run by [`super::lanes`], file steps by [`super::files`]; the
//! scenario around the steps (sessions, the outcome) by [`super::runner`].

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::files::write_creating;
use crate::format::*;
use crate::runner::{Run, Stop};
use crate::vars;
use taskproof_core::graph::{Graph, completed_words, cycle_words, task_name};
use taskproof_core::protocol::{Answer, Response};
use taskproof_core::task::{Task, TaskId};
use taskproof_profile::{Mode, observe};
use taskproof_report::result::{StepRecord, StepVerdict};
use taskproof_session::SessionEvent;

/// What a file operation of a step met, in words rather than the OS's (`No such file or
/// directory (os error 2)` reads like a crash of the harness; it is what the root held).
fn io_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => "the root has no such file or folder".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::AlreadyExists => "something of that name is there already".into(),
        ErrorKind::NotADirectory => "a part of its path is a file, not a folder".into(),
        ErrorKind::IsADirectory => "it is a folder".into(),
        ErrorKind::DirectoryNotEmpty => "the folder is not empty".into(),
        other => other.to_string(),
    }
}

impl Run<'_> {
    pub(super) fn step(&mut self, step: &Step) -> Result<(), Stop> {
        let io_fail = |run: &Run<'_>, what: &str, e: std::io::Error| {
            let words = io_words(&e);
            run.fail(
                step,
                None,
                json!(what),
                json!(words),
                format!("could not {what}: {words}"),
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
                            self.observation = e.observe(&answer.json);
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
                    // After a session step, the failure says what became of the tasks the
                    // request is about: deleted, or kept where the session no longer looks.
                    let found = self.finding(step, &request, &answer.json);
                    let reason = match &found {
                        Some(f) => format!("{reason}; {}", f.words()),
                        None => reason,
                    };
                    let mut stop = self.fail(step, Some(request), expected, answer.json, reason);
                    if let Stop::Fail(f) = &mut stop
                        && let Some(w) = f.witness.as_mut()
                    {
                        w.finding = found;
                    }
                    return Err(stop);
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
            Action::Kill(name) => {
                self.mark_event(step, format!("kill (session {name})"));
                self.session_event(step, name, SessionEvent::Kill)
            }
            Action::Wait(d) => {
                self.mark_event(step, format!("wait {} s", d.as_secs_f64()));
                if self.config.target.acts_between_requests() {
                    std::thread::sleep(*d);
                } else {
                    // Nothing of an in-process store runs between requests: the wait would
                    // only delay the same answers.
                    let note = format!(
                        "steps[{}] wait: {} runs in this process and does nothing between requests, so no time was spent waiting",
                        step.index, self.config.target
                    );
                    if !self.target_notes.contains(&note) {
                        self.target_notes.push(note);
                    }
                }
                Ok(())
            }
            Action::Event { event, session } => {
                self.mark_event(step, format!("{event} (session {session})"));
                self.session_event(step, session, *event)
            }
            Action::Close(name) => self
                .end(name, false)
                .map_err(|e| Self::target_error(step, None, format!("session {name}: {e}"))),
            Action::WriteTask { list, id, task } => {
                let list = self.fill_text(step, list)?;
                let id = self.fill_text(step, id)?;
                let task = self.fill(step, task)?;
                let path = self.root_path(step, &format!("{list}/{{task:{id}}}"))?;
                let bytes = serde_json::to_vec_pretty(&taskproof_core::layout::to_disk(
                    self.layout,
                    &id,
                    &task,
                ))
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

    /// A session event: done by the session itself when it is an agent conversation
    /// (`Session::event`), else by the runner on the connection (`exit` closes it, `kill`
    /// kills it, `resume` opens a new one; `clear` and `compact` were gated out before).
    fn session_event(&mut self, step: &Step, name: &str, event: SessionEvent) -> Result<(), Stop> {
        let failed = |e: taskproof_session::TargetError| {
            Self::target_error(step, None, format!("session {name}: {event}: {e}"))
        };
        match event {
            SessionEvent::Resume => {
                let Some(mut s) = self.suspended.remove(name) else {
                    return self.session(step, name).map(|_| ());
                };
                match s.event(event) {
                    Ok(true) => {
                        self.sessions.insert(name.to_string(), s);
                        Ok(())
                    }
                    Ok(false) => {
                        self.ended.push((name.to_string(), s.stderr()));
                        self.session(step, name).map(|_| ())
                    }
                    Err(e) => {
                        self.ended.push((name.to_string(), s.stderr()));
                        Err(failed(e))
                    }
                }
            }
            SessionEvent::Exit | SessionEvent::Kill => {
                let Some(mut s) = self.sessions.remove(name) else {
                    // Not open (never used, or ended already): nothing to end.
                    return Ok(());
                };
                match s.event(event) {
                    Ok(true) => {
                        self.suspended.insert(name.to_string(), s);
                        Ok(())
                    }
                    Ok(false) => {
                        self.sessions.insert(name.to_string(), s);
                        self.end(name, event == SessionEvent::Kill).map_err(failed)
                    }
                    Err(e) => {
                        self.ended.push((name.to_string(), s.stderr()));
                        Err(failed(e))
                    }
                }
            }
            SessionEvent::Clear | SessionEvent::Compact => {
                let s = self.session(step, name)?;
                match s.event(event) {
                    Ok(true) => Ok(()),
                    Ok(false) => {
                        // A connection to a store has no conversation: the user's command
                        // happens in the agent above the store, which sees nothing of it.
                        self.target_notes.push(format!(
                            "steps[{}] {event}: {}'s sessions are connections to a task store, not agent conversations; what a user does to an agent's conversation (/clear, /compact) happens in the agent above the store, which sees nothing of it",
                            step.index, self.config.target
                        ));
                        Ok(())
                    }
                    Err(e) => Err(failed(e)),
                }
            }
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
