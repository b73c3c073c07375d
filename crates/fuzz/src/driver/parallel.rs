//! A case's parallel part: each lane's requests planned against the model, sent at once from
//! a thread per session, and the history from the parallel part on searched for an order
//! the model explains.

use super::*;

impl CaseRun<'_> {
    /// Searches the history from the parallel part on again; the model after the order it
    /// finds is the oracle from now on.
    pub(super) fn judge_history(&mut self) -> Result<Option<End>, CaseError> {
        let judging = self.judging.as_ref().expect("judging");
        match judge(&judging.before, &judging.history, SEARCH_BUDGET) {
            Judged::Explained { model, .. } => {
                self.oracle = model;
                self.note_created_by_history();
                Ok(None)
            }
            Judged::Unknown { .. } => Ok(Some(End::Unknown)),
            Judged::Unexplained {
                stuck,
                placed,
                reason,
                ..
            } => {
                let at = judging.record_of[stuck];
                let requests = judging.history.len();
                let actual = judging.history[stuck].sent.answer.clone();
                // What the model answers the request that could not be placed when the
                // requests are taken in the order they were sent (the reason says what it
                // answers in the deepest order the search reached).
                let mut in_order = judging.before.clone();
                for t in &judging.history[..stuck] {
                    in_order.handle_value(&t.sent.request);
                }
                let expected = in_order.handle_value(&judging.history[stuck].sent.request);
                Ok(Some(End::Diverged(Box::new(Divergence {
                    at,
                    expected,
                    actual: Ok(actual),
                    differences: vec![reason.clone()],
                    concurrent: Some(Unexplained {
                        requests,
                        placed,
                        reason,
                    }),
                }))))
            }
        }
    }

    /// After the search placed a parallel part: the tasks its creates made, as the target
    /// numbered them, become tasks the later steps can name.
    pub(super) fn note_created_by_history(&mut self) {
        let Some(judging) = &self.judging else {
            return;
        };
        for t in &judging.history {
            if let (Response::Task(task), Some("create")) = (
                &t.sent.answer,
                t.sent.request.get("op").and_then(Value::as_str),
            ) {
                let l = t.sent.request["list"].as_str().unwrap_or_default();
                let list_ids = self.ids.entry(l.to_string()).or_default();
                if !list_ids.created.contains(&task.id) {
                    list_ids.created.push(task.id);
                    list_ids.created.sort();
                }
            }
        }
    }

    /// The parallel part (`serial`: its requests sent one after another instead; `lockstep`:
    /// the lanes meet before each round): each
    /// lane's requests resolved first (against the oracle as the
    /// sequence left it, each lane as if it ran alone), the lanes' sessions opened, then
    /// released together, each lane sending its requests one after another on a thread of
    /// its own. The history is then searched for an order the oracle explains.
    pub(super) fn parallel(
        &mut self,
        lanes: &[Vec<Step>],
        serial: bool,
        lockstep: bool,
    ) -> Result<Option<End>, CaseError> {
        let mut planned: Vec<Vec<LaneRequest>> = Vec::with_capacity(lanes.len());
        for lane in lanes {
            planned.push(self.plan_lane(lane));
        }
        if serial {
            // The same requests one after another, each answer compared as a sequence's, in
            // rounds as the lanes meet them (each lane's first request, then each lane's
            // second, ...).
            let rounds = planned.iter().map(Vec::len).max().unwrap_or(0);
            let mut lanes: Vec<_> = planned.into_iter().map(Vec::into_iter).collect();
            for _ in 0..rounds {
                for (i, lane) in lanes.iter_mut().enumerate() {
                    let Some(r) = lane.next() else { continue };
                    for l in LISTS.iter().filter(|l| r.request["list"] == **l) {
                        self.touched.insert(l);
                    }
                    if let Some(end) = self.send(i, r.request, r.shown, None, false)? {
                        return Ok(Some(end));
                    }
                }
            }
            return Ok(None);
        }
        for i in 0..planned.len() {
            if let Err(e) = self.session(i) {
                self.records.push(Record::sequential(
                    ResolvedStep::Restart { session: i },
                    None,
                    false,
                ));
                return Ok(Some(broke_at_last(&self.records, &e, "open")));
            }
        }
        let mut sessions: Vec<Box<dyn Session>> = (0..planned.len())
            .map(|i| self.ready.sessions.remove(&i).expect("opened above"))
            .collect();
        // In lockstep the lanes meet before each round of requests, so that the n-th
        // requests of all lanes really race (lanes that only start together drift apart
        // within a request or two); otherwise only before the first. A lane that ran out of
        // requests, or whose session broke, still meets the barrier every round, so no lane
        // waits for it.
        let rounds = planned.iter().map(Vec::len).max().unwrap_or(0);
        let barrier = std::sync::Barrier::new(planned.len());
        let origin = Instant::now();
        let lists = self.lists;
        let done: Vec<LaneDone> = std::thread::scope(|scope| {
            let handles: Vec<_> = sessions
                .drain(..)
                .zip(planned)
                .map(|(mut session, requests)| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        let mut out = Vec::with_capacity(requests.len());
                        let mut requests = requests.into_iter();
                        let mut broke = false;
                        for round in 0..rounds {
                            if lockstep || round == 0 {
                                barrier.wait();
                            }
                            let Some(r) = requests.next().filter(|_| !broke) else {
                                continue;
                            };
                            let wire = wire_of(lists, &r.request);
                            let invoke = origin.elapsed();
                            let answer = session
                                .call(&wire)
                                .map_err(|e| e.to_string())
                                .and_then(|v| Response::from_json(&v, op_of(&r.request)));
                            let complete = origin.elapsed();
                            broke = answer.is_err();
                            out.push((r, answer, invoke, complete));
                        }
                        (session, out)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a lane does not panic"))
                .collect()
        });
        self.coverage.did("parallel part");
        let mut all = Vec::new();
        for (i, (session, out)) in done.into_iter().enumerate() {
            self.ready.sessions.insert(i, session);
            all.extend(out.into_iter().map(|x| (i, x)));
        }
        all.sort_by_key(|(_, (_, _, invoke, _))| *invoke);
        self.coverage.met_interleaving(
            &all.iter()
                .map(|(lane, (_, _, invoke, complete))| (*lane, *invoke, *complete))
                .collect::<Vec<_>>(),
        );
        let mut judging = Judging {
            before: self.oracle.clone(),
            origin,
            history: Vec::with_capacity(all.len()),
            record_of: Vec::with_capacity(all.len()),
            ids_before: self.ids.clone(),
        };
        let mut broken: Option<(usize, String)> = None;
        for (lane, (r, answer, invoke, complete)) in all {
            self.coverage.sent(&r.request, &answer, false);
            self.coverage.concurrent += 1;
            self.coverage.requests += complete.saturating_sub(invoke);
            if let Some(l) = r.request.get("list").and_then(Value::as_str)
                && let Some(l) = LISTS.iter().find(|x| **x == l)
            {
                self.touched.insert(l);
            }
            let at = self.records.len();
            self.records.push(Record {
                action: ResolvedStep::Send {
                    session: lane,
                    request: r.request.clone(),
                    shown: r.shown,
                    bind: None,
                },
                expected: None,
                final_check: false,
                lane: Some(lane),
                concurrent: true,
                timed: Some((invoke, complete)),
            });
            match answer {
                Ok(answer) => {
                    let loose = self.loose && r.request["op"] != "list";
                    judging.history.push(Timed {
                        sent: Sent {
                            who: SESSIONS[lane % SESSIONS.len()].to_string(),
                            request: r.request,
                            answer,
                            loose,
                        },
                        invoke,
                        complete,
                    });
                    judging.record_of.push(at);
                }
                Err(e) => {
                    broken.get_or_insert((at, e));
                }
            }
        }
        if let Some((at, e)) = broken {
            self.records.truncate(at + 1);
            return Ok(Some(End::Diverged(Box::new(Divergence {
                at,
                expected: Response::Done,
                actual: Err(e.clone()),
                differences: vec![format!("target error: {e}")],
                concurrent: None,
            }))));
        }
        self.judging = Some(judging);
        self.judge_history()
    }

    /// Resolves a lane's steps against a copy of the oracle, as if the lane ran alone; an
    /// id the lane's own creates would take is written as a number, not a variable (which
    /// task gets it depends on the order the lanes meet).
    pub(super) fn plan_lane(&mut self, lane: &[Step]) -> Vec<LaneRequest> {
        let mut oracle = self.oracle.clone();
        let mut ids = self.ids.clone();
        let mut out = Vec::new();
        for step in lane {
            self.coverage.generated += 1;
            let r = Resolver {
                oracle: &oracle,
                ids: &ids,
            };
            let Some(ResolvedStep::Send {
                mut request,
                mut shown,
                ..
            }) = resolve(step, &r)
            else {
                self.coverage.leave_out("not a request, in a parallel part");
                continue;
            };
            // A request the target carries out in several calls shows the others its state
            // between them: no order of whole requests explains that, so in a parallel part
            // a create goes without the fields made in later calls, and an update without
            // a field made apart that is not a list (a list is cut into one request an item,
            // each one call; a status the mapping reaches by conditional calls, say pending
            // to completed through in_progress, is several calls in one request).
            let left_out = match request["op"].as_str() {
                Some("create") => take_fields(
                    &mut request,
                    &mut shown,
                    "task",
                    &self.offer.create_apart,
                    |_| true,
                ),
                Some("update") => {
                    take_fields(&mut request, &mut shown, "patch", &self.offer.apart, |v| {
                        !v.is_array()
                    })
                }
                _ => Vec::new(),
            };
            for field in &left_out {
                self.coverage.leave_out(format!(
                    "{}'s {field} in a parallel part (made of calls apart)",
                    if request["op"] == "create" {
                        "a create"
                    } else {
                        "a patch"
                    }
                ));
            }
            // A patch with nothing left asks for nothing.
            if !left_out.is_empty() && request["patch"].as_object().is_some_and(|p| p.is_empty()) {
                continue;
            }
            let Some(requests) = self.fit(&mut request, &mut shown) else {
                continue;
            };
            for (request, shown) in requests {
                let expected = oracle.handle_value(&request);
                note_ids(&mut ids, &request, &expected);
                let shown = unbind(shown, &self.ids);
                out.push(LaneRequest { request, shown });
            }
        }
        out
    }
}
