//! Concurrent blocks: a scenario's lanes send their requests at once, each through its own
//! session, and the block is judged by the race harness's checker on the history they made
//! (so a lost write is explained the same way `taskproof race` explains it).

use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::format::*;
use crate::interpret::violations;
use crate::runner::{Run, Stop};
use crate::vars;
use taskproof_core::graph::Graph;
use taskproof_core::protocol::{Answer, Request};
use taskproof_core::task::Task;
use taskproof_race::check;
use taskproof_race::history::History;
use taskproof_race::model::{Judged, Sent as ModelSent, Timed, judge};
use taskproof_session::{Session, TargetError};

/// The name of the session a concurrent block's verification reads through; scenario
/// session names cannot contain `#`.
const VERIFY_SESSION: &str = "#verify";

impl Run<'_> {
    pub(super) fn concurrent(&mut self, step: &Step, c: &Concurrent) -> Result<(), Stop> {
        // Every request is filled in before the lanes start, so that a lane only sends.
        let mut plans: Vec<(String, Vec<Value>)> = Vec::new();
        for lane in &c.lanes {
            let mut reqs = Vec::with_capacity(lane.repeat);
            for i in 0..lane.repeat {
                let mut vars = self.vars.clone();
                vars.insert("i".into(), json!(i));
                let template = lane.sends.get(i).unwrap_or(&lane.send);
                let r = vars::substitute(template, &vars).map_err(|e| self.unbound(step, e))?;
                reqs.push(r);
            }
            plans.push((lane.session.clone(), reqs));
        }
        // A linearizable block's model: the profile's, given what the scenario sent so far.
        let model = if c.verify == Verify::Linearizable {
            let Some(mut model) = taskproof_profile::oracle::Oracle::new(self.config.profile)
            else {
                self.notes.push(format!(
                    "steps[{}] not judged: profile {} has no model to search a linearizable block against",
                    step.index, self.config.profile
                ));
                return Ok(());
            };
            for r in &self.sent {
                model.handle_value(r);
            }
            Some(model)
        } else {
            None
        };
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
            let options = &self.options;
            let target = &self.config.target;
            let opened: Vec<_> = std::thread::scope(|scope| {
                let handles: Vec<_> = missing
                    .into_iter()
                    .map(|name| {
                        let root = &root;
                        let options = options.clone();
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
        // In lockstep, every lane meets every round, the longest lane's count of them.
        let rounds = taken.iter().map(|(_, _, r)| r.len()).max().unwrap_or(0);
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
                        let count = reqs.len();
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
                        // A shorter lane in lockstep meets the rounds it has no request for.
                        if lockstep {
                            for _ in count.max(1)..rounds {
                                barrier.wait();
                            }
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
        let mut lanes: Vec<(String, Vec<Sent>)> = Vec::new();
        for (name, s, log) in finished {
            self.sessions.insert(name.clone(), s);
            let mut sent_here = Vec::with_capacity(log.len());
            for (req, invoke, at, answer) in log {
                sent += 1;
                let decoded = answer
                    .map_err(|e| format!("session {name}: {e}"))
                    .and_then(|a| Answer::decode(&req, a));
                match decoded {
                    Err(m) => {
                        first_error
                            .get_or_insert_with(|| Self::target_error(step, Some(req.clone()), m));
                    }
                    Ok(a) => {
                        acked += usize::from(a.is_ok());
                        sent_here.push((req, invoke, at, a));
                    }
                }
            }
            lanes.push((name, sent_here));
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        // What a later `linearizable` block's model is given: the lanes' answered requests,
        // in the order they were sent (an approximation of the order the store took them).
        let mut answered: Vec<(Duration, &Value)> = lanes
            .iter()
            .flat_map(|(_, log)| log.iter().map(|(req, invoke, ..)| (*invoke, req)))
            .collect();
        answered.sort_by_key(|(invoke, _)| *invoke);
        let answered: Vec<Value> = answered.into_iter().map(|(_, r)| r.clone()).collect();
        self.sent.extend(answered);
        if let Some(model) = model {
            return self.linearizable(step, c, model, lanes, t0);
        }
        let list = self.fill_text(step, &c.list)?;
        let tasks = self.listing(step, VERIFY_SESSION, &list)?;
        self.end(VERIFY_SESSION, false)
            .map_err(|e| Self::target_error(step, None, format!("verification session: {e}")))?;
        let history = lane_history(&lanes);
        let broken = verify(c.verify, &history, &tasks);
        // [recorded profiles] Every block is observed, held or not, with its counts.
        if !matches!(self.config.mode, taskproof_profile::Mode::Expectations) {
            self.observation = Some(taskproof_profile::observe::concurrent(
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

impl Run<'_> {
    /// Judges a `linearizable` block: its `then` requests are sent one after another once
    /// the lanes are done, and the whole history must be explained by some order of its
    /// requests (real time respected) in which `model` answers as the target did.
    fn linearizable(
        &mut self,
        step: &Step,
        c: &Concurrent,
        model: taskproof_profile::oracle::Oracle,
        lanes: Vec<(String, Vec<Sent>)>,
        t0: Instant,
    ) -> Result<(), Stop> {
        // Through a target that reads its answers apart from the change, an answer is judged
        // by its kind only (taskproof_race::model::Sent::loose), as the fuzzer judged it.
        let loose = self.config.target.not_atomic().is_some();
        let mut history: Vec<Timed> = Vec::new();
        for (name, log) in &lanes {
            for (req, invoke, at, answer) in log {
                let Some(response) = answer.response.clone() else {
                    continue;
                };
                history.push(Timed {
                    sent: ModelSent {
                        who: name.clone(),
                        request: req.clone(),
                        answer: response,
                        loose,
                    },
                    invoke: *invoke,
                    complete: *at,
                });
            }
        }
        for t in &c.then {
            let request = self.fill(step, &t.send)?;
            let invoke = t0.elapsed();
            let answer = self.call(step, &t.session, &request)?;
            let complete = t0.elapsed();
            if let Some(response) = answer.response {
                history.push(Timed {
                    sent: ModelSent {
                        who: t.session.clone(),
                        request: request.clone(),
                        answer: response,
                        // A listing is one read: judged whole.
                        loose: loose && request["op"] != "list",
                    },
                    invoke,
                    complete,
                });
            }
        }
        history.sort_by_key(|t| t.invoke);
        let why = match judge(&model, &history, LINEARIZABLE_BUDGET) {
            Judged::Explained { .. } => return Ok(()),
            Judged::Unknown { steps } => format!(
                "undecided: the search for an order ran out of its budget after {steps} steps; not a pass"
            ),
            Judged::Unexplained {
                stuck,
                placed,
                reason,
                ..
            } => {
                let s = &history[stuck];
                format!(
                    "no order of the block's {} requests explains the answers: the deepest order placed {placed} of them, then {}'s {} ({} ms to {} ms) could not be placed: {reason}",
                    history.len(),
                    s.sent.who,
                    s.sent.request,
                    s.invoke.as_millis(),
                    s.complete.as_millis(),
                )
            }
        };
        match c.expect.get(self.config.profile) {
            Some(VerifyExpect::Any) | None => {
                self.notes.push(format!(
                    "steps[{}] (not promised under {}): {why}",
                    step.index, self.config.profile
                ));
                Ok(())
            }
            Some(VerifyExpect::Holds) => Err(self.fail(
                step,
                None,
                json!({"verify": "linearizable", "expect": "holds"}),
                json!({"requests": history.len()}),
                why,
            )),
        }
    }
}

/// The search's budget for one `linearizable` block (the fuzzer's, as its findings are
/// such blocks).
const LINEARIZABLE_BUDGET: u64 = 2_000_000;

/// One request of a concurrent lane: the request, when it was sent and answered (since the
/// block started), and the answer.
type LaneEntry = (Value, Duration, Duration, Result<Value, TargetError>);

/// A request of a concurrent lane that was answered validly, with its decoded answer.
type Sent = (Value, Duration, Duration, Answer);

/// The lanes' requests as a race-harness history, so that a concurrent block is judged by the
/// same checker as `taskproof race` (and its witnesses explain what was lost, by whom). Lane
/// `w` is session and writer `w`. Requests that are not well-formed requests cannot change
/// anything and are left out.
fn lane_history(lanes: &[(String, Vec<Sent>)]) -> History {
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
            let response = answer
                .response
                .clone()
                .ok_or_else(|| "no response to a well-formed request".to_string());
            h.record(w as u32, Some(w as u32), r, *invoke, *at, response);
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
        Verify::Linearizable => unreachable!("judged by Run::linearizable"),
        Verify::DeletedStayDeleted => deleted_stay_deleted(history, tasks),
    };
    witnesses.into_iter().map(|w| w.text).collect()
}

/// `deleted_stay_deleted`: no task deleted with an acknowledged delete is listed afterwards,
/// and no request sent after that acknowledgement succeeded on it; each witness names the
/// delete and the write that brought the task back ([`check::revived`]).
fn deleted_stay_deleted(history: &History, tasks: &[Task]) -> Vec<check::Witness> {
    check::revived(history, tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskproof_core::task::TaskId;

    fn task(id: u64, owner: Option<&str>, metadata: Value) -> Task {
        let mut t = Task::new(TaskId(id), format!("t{id}"));
        t.owner = owner.map(str::to_string);
        t.metadata = metadata.as_object().cloned().filter(|m| !m.is_empty());
        t
    }

    /// A history of one lane per entry list, answered in order, 1 ms apart.
    fn history(lanes: Vec<Vec<(Value, Value)>>) -> History {
        let lanes: Vec<(String, Vec<Sent>)> = lanes
            .into_iter()
            .enumerate()
            .map(|(w, entries)| {
                let log = entries
                    .into_iter()
                    .enumerate()
                    .map(|(k, (req, answer))| {
                        let t = Duration::from_millis((10 * k + w) as u64);
                        let answer = Answer::decode(&req, answer).expect("a valid answer");
                        (req, t, t + Duration::from_millis(1), answer)
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
    fn deleted_stay_deleted_finds_a_task_written_back_after_its_delete() {
        // Lane 0's update (sent at 0 ms, answered at 1 ms) meets lane 1's delete (1 to
        // 2 ms): ordered before the delete it is fine, unless the task is listed afterwards.
        let delete = (
            json!({"op": "delete", "list": "l", "id": "1"}),
            json!({"ok": true}),
        );
        let h = history(vec![
            vec![update("1", json!({"a0": 0}), json!({"a0": 0}))],
            vec![delete],
        ]);
        assert!(verify(Verify::DeletedStayDeleted, &h, &[]).is_empty());
        let back = [task(1, None, json!({"a0": 0}))];
        let found = verify(Verify::DeletedStayDeleted, &h, &back);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("task 1 came back after its delete")
                && found[0].contains("the final listing still holds it"),
            "{found:?}"
        );
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
}
