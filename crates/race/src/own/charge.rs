//! Whose loss: each target's lost changes charged to itself or to the other target, from
//! what the driver saw happen to its task files (the rules are the module's text, own.rs).

use super::*;

/// The label of writer `w`: its target's letter and its member (`A lead`, `A w1`; with
/// several teams in the target, its team too: `A team 2 w1`), or its number (`B writer 2`).
pub fn writer_label(run: &OwnRun, w: usize) -> String {
    match run.writers.get(w) {
        Some(WriterOf {
            target,
            member: Some(m),
        }) => {
            // Each team's writers follow its lead's.
            let leads = |ws: &[WriterOf]| {
                ws.iter()
                    .filter(|x| x.target == *target && x.member.as_deref() == Some("lead"))
                    .count()
            };
            if leads(&run.writers) > 1 {
                let team = leads(&run.writers[..=w]);
                format!("{} team {team} {m}", files::letter(*target))
            } else {
                format!("{} {m}", files::letter(*target))
            }
        }
        Some(WriterOf { target, .. }) => format!("{} writer {w}", files::letter(*target)),
        None => format!("writer {w}"),
    }
}

/// The request that dropped the lost change of witness `ops` (its first is the change), in
/// one target's history: a write of the same task by another session in flight while the
/// change was made (sent before it was acknowledged, answered after it was sent, or never),
/// the checker's named request (`ops[1]`) when it is one of them, else the first; with none
/// in flight, the named request. `None` when neither: nobody else's write explains it.
pub fn dropping_request(history: &History, ops: &[usize], task: Option<TaskId>) -> Option<usize> {
    let change = &history.ops[*ops.first()?];
    let named = ops.get(1).copied();
    let in_flight: Vec<usize> = history
        .ops
        .iter()
        .filter(|o| crate::mix::wrote_during(o, change, task))
        .map(|o| o.index)
        .collect();
    match (named, in_flight.first()) {
        (Some(n), _) if in_flight.contains(&n) => Some(n),
        (_, Some(&first)) => Some(first),
        (named, None) => named,
    }
}

/// Each writer's share of the run, and the writer each charge falls on, for a race whose
/// writers are named one by one (a target with agent teams); empty otherwise. A loss charged
/// to the target whose change it was falls on the writer of [`dropping_request`], else on
/// the writer that made the change (nobody else's write explains it); one charged to another
/// target falls, when that target replaced the file, on the writer of its last acknowledged
/// create of a task kept in a file of that name, else (it removed the file) on its writer
/// when it has one writer, else on none of them.
pub fn charge_writers(
    run: &OwnRun,
    findings: &[Findings],
    charges: &mut [Charge],
) -> Vec<WriterLosses> {
    if !run.writers.iter().any(|w| w.member.is_some()) {
        return Vec::new();
    }
    let mut per: Vec<WriterLosses> = run
        .writers
        .iter()
        .enumerate()
        .map(|(w, of)| WriterLosses {
            writer: writer_label(run, w),
            target: run.targets[of.target].clone(),
            member: of.member.clone(),
            ..WriterLosses::default()
        })
        .collect();
    for p in &run.parts {
        for op in &p.history.ops {
            if let Some(w) = op.writer.and_then(|w| per.get_mut(w as usize)) {
                w.requests += 1;
                if matches!(op.completion, Completion::Ok { .. }) {
                    w.acknowledged += 1;
                }
            }
        }
    }
    for (w, n) in overlapping(run).into_iter().enumerate() {
        per[w].overlapping = n;
    }
    let writers_of = |t: usize| -> Vec<usize> {
        (0..run.writers.len())
            .filter(|&w| run.writers[w].target == t)
            .collect()
    };
    for charge in charges.iter_mut() {
        // The witness of this charge: the lost change of the target that acknowledged it.
        let Some((t, witness)) = findings.iter().enumerate().find_map(|(t, f)| {
            (run.targets[t] == charge.acknowledged_by)
                .then(|| {
                    f.witnesses
                        .iter()
                        .find(|w| w.kind == AnomalyKind::Lost && w.ops == charge.ops)
                })
                .flatten()
                .map(|w| (t, w))
        }) else {
            continue;
        };
        let history = &run.parts[t].history;
        let Some(&first) = witness.ops.first() else {
            continue;
        };
        let made_by = history.ops[first].writer.map(|w| w as usize);
        if let Some(w) = made_by {
            per[w].lost_of_its_own += 1;
            charge.acknowledged_by_writer = Some(writer_label(run, w));
        }
        let u = run
            .targets
            .iter()
            .position(|x| *x == charge.charged_to)
            .unwrap_or(t);
        let writer = if u == t {
            dropping_request(history, &witness.ops, witness.task)
                .and_then(|i| history.ops[i].writer)
                .map(|w| w as usize)
                .or(made_by)
        } else {
            // The other target wrote a file of the same name: the writer of its last
            // acknowledged create of a task kept in that file replaced it.
            let replaced_by = witness
                .task
                .and_then(|id| run.files_of[t].get(&id))
                .filter(|file| {
                    run.fates[t]
                        .get(*file)
                        .is_some_and(|f| f.what == "replaced")
                })
                .and_then(|file| {
                    run.parts[u]
                        .history
                        .ops
                        .iter()
                        .filter(|o| {
                            matches!(o.request, Request::Create { .. })
                                && matches!(o.completion, Completion::Ok { .. })
                                && o.task_id()
                                    .and_then(|id| run.files_of[u].get(&id))
                                    .is_some_and(|f| f == file)
                        })
                        .max_by_key(|o| o.completion.at())
                        .and_then(|o| o.writer)
                        .map(|w| w as usize)
                });
            replaced_by.or(match writers_of(u).as_slice() {
                [only] => Some(*only),
                _ => None,
            })
        };
        if let Some(w) = writer {
            per[w].lost += 1;
            charge.charged_to_writer = Some(writer_label(run, w));
        }
    }
    per
}

/// Per writer: how many of its requests were in flight at some moment while a request of
/// another writer of the same target was (its span, from sent to answered, meets one of
/// theirs).
pub fn overlapping(run: &OwnRun) -> Vec<usize> {
    let span = |o: &Operation| (o.invoke, o.completion.at());
    (0..run.writers.len())
        .map(|w| {
            let t = run.writers[w].target;
            let ops = &run.parts[t].history.ops;
            // The other writers' spans, merged into disjoint ones in order.
            let mut others: Vec<(Duration, Duration)> = ops
                .iter()
                .filter(|o| o.writer.is_some_and(|x| x as usize != w))
                .map(span)
                .collect();
            others.sort();
            let mut merged: Vec<(Duration, Duration)> = Vec::new();
            for (s, e) in others {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            ops.iter()
                .filter(|o| o.writer == Some(w as u32))
                .filter(|o| {
                    let (s, e) = span(o);
                    let i = merged.partition_point(|m| m.1 <= s);
                    merged.get(i).is_some_and(|m| m.0 < e)
                })
                .count()
        })
        .collect()
}

/// Charges each lost change of each target (see the module's text), and counts each
/// target's requests. `findings[t]` are target `t`'s own findings.
pub fn charge(run: &OwnRun, findings: &[Findings]) -> (Vec<TargetLosses>, Vec<Charge>) {
    let n = run.targets.len();
    let mut per: Vec<TargetLosses> = run
        .parts
        .iter()
        .enumerate()
        .map(|(t, p)| {
            let writers: BTreeSet<u32> = p.history.ops.iter().filter_map(|o| o.writer).collect();
            let mut tl = TargetLosses {
                target: run.targets[t].clone(),
                writers: writers.len(),
                ..TargetLosses::default()
            };
            for op in p.history.ops.iter().filter(|o| o.writer.is_some()) {
                tl.requests += 1;
                if matches!(op.completion, Completion::Ok { .. }) {
                    tl.acknowledged += 1;
                }
            }
            tl
        })
        .collect();
    let mut charges = Vec::new();
    for (t, f) in findings.iter().enumerate().take(n) {
        let p = &run.parts[t];
        for w in f.witnesses.iter().filter(|w| w.kind == AnomalyKind::Lost) {
            let Some(&acked) = w.ops.first() else {
                continue;
            };
            let change = &p.history.ops[acked];
            let locked = crate::mix::under_lock(&run.targets[t], &change.request);
            let fate = w
                .task
                .and_then(|id| run.files_of[t].get(&id))
                .and_then(|file| run.fates[t].get(file));
            let (charged, why) = match fate {
                Some(Fate {
                    by: Some(u),
                    what,
                    when,
                    evidence,
                }) if *u != t => (
                    *u,
                    Some(format!(
                        "{} {what} the task's file {when}: {evidence}",
                        files::letter(*u)
                    )),
                ),
                Some(fate) => (
                    t,
                    Some(format!(
                        "the task's file was {}: {}",
                        fate.what, fate.evidence
                    )),
                ),
                // A change made under the list's lock, lost while another target deleted
                // that lock: said, though the dropping write was its own target's.
                None => (t, locked.then(|| lock_note(run, t)).flatten()),
            };
            per[charged].lost += 1;
            if charged == t {
                per[t].lost_own += 1;
            } else {
                per[charged].lost_of_others += 1;
            }
            charges.push(Charge {
                ops: w.ops.clone(),
                acknowledged_by: run.targets[t].clone(),
                under_lock: locked,
                dropped_by: (w.ops.len() > 1).then(|| run.targets[t].clone()),
                charged_to: run.targets[charged].clone(),
                acknowledged_by_writer: None,
                charged_to_writer: None,
                why,
            });
        }
    }
    (per, charges)
}

/// For a loss of target `t`'s own: another target deleted or replaced `t`'s `.lock`
/// during the race, when the report saw it (the loss is still `t`'s writers' doing).
fn lock_note(run: &OwnRun, t: usize) -> Option<String> {
    let e = run.files.effects.iter().find(|e| {
        e.file == ".lock"
            && e.on == run.targets[t]
            && e.when == phase_words(run.targets.len(), run.targets.len())
            && e.by.as_ref().is_some_and(|b| *b != run.targets[t])
    })?;
    Some(format!(
        "dropped by {}'s own writers; meanwhile {} {} {}'s `.lock` {} times during the race (seen)",
        files::letter(t),
        e.by.as_deref()
            .and_then(|b| run.targets.iter().position(|x| x == b))
            .map_or('?', files::letter),
        e.what,
        files::letter(t),
        e.count
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Witness;
    use crate::files::{Entry, SeenChange, SeenRemoval};
    use crate::history::TaskView;
    use taskproof_core::task::{NewTask, Task};

    fn entry(kind: FileKind, subject: Option<&str>) -> Entry {
        Entry {
            kind,
            subject: subject.map(str::to_string),
            preview: None,
        }
    }

    fn snap(files: &[(&str, Entry)]) -> Snapshot {
        Snapshot {
            files: files
                .iter()
                .map(|(n, e)| (n.to_string(), e.clone()))
                .collect(),
        }
    }

    /// A part whose setup created task 1 with `subject`, and nothing else.
    fn part_with_task_1(layout: Layout, subject: &str) -> Run {
        let keys = KeyTable::default();
        let mut history = History::default();
        history.push(Operation {
            index: 0,
            session: 0,
            writer: None,
            request: Request::Create {
                list: list_name(),
                task: NewTask::new(subject),
            },
            invoke: Duration::ZERO,
            completion: Completion::Ok {
                at: Duration::from_millis(1),
                task: Some(TaskView::new(&Task::new(TaskId(1), subject), &keys)),
            },
        });
        Run {
            workload: Workload::Metadata,
            history,
            final_tasks: Vec::new(),
            corrupt: Vec::new(),
            torn: Vec::new(),
            torn_reads: 0,
            raw_reads: 0,
            planned: 0,
            elapsed: Duration::ZERO,
            released: Duration::ZERO,
            end: Duration::ZERO,
            kills: 0,
            sessions: 1,
            errors: Vec::new(),
            layout,
            targets: Vec::new(),
            writer_targets: Vec::new(),
            settle: None,
        }
    }

    /// A's task file 1.json and its empty `.lock` (left by A's setup), then B's setup and
    /// the race; `gone_in` is the phase the watcher saw 1.json go in.
    fn judged(gone_in: usize, a_acts: bool) -> OwnRun {
        let a_left = snap(&[
            ("1.json", entry(FileKind::Json, Some("A: t"))),
            (".lock", entry(FileKind::Empty, None)),
        ]);
        let b_left = if gone_in == 1 {
            snap(&[])
        } else {
            snap(&[("1.json", entry(FileKind::Json, Some("A: t")))])
        };
        let snaps = vec![
            ("before the run".to_string(), snap(&[])),
            ("after A's setup".to_string(), a_left),
            ("after B's setup".to_string(), b_left),
            ("at the end".to_string(), snap(&[])),
        ];
        let mut log = WatchLog::default();
        log.changes.insert(
            SeenChange {
                file: ".lock",
                phase: 1,
                from: FileKind::Empty,
                to: FileKind::Missing,
            },
            1,
        );
        log.removals.push(SeenRemoval {
            file: "1.json".into(),
            phase: gone_in,
            after: Duration::from_millis(3),
        });
        let parts = vec![
            part_with_task_1(Layout::ClaudeCode, "A: t"),
            part_with_task_1(Layout::Opaque, "B: t"),
        ];
        let none = tempfile::tempdir().unwrap();
        judge_files(
            Workload::Metadata,
            vec!["a".into(), "b".into()],
            vec![Layout::ClaudeCode, Layout::Opaque],
            vec![a_acts, true],
            parts,
            &[Vec::new(), Vec::new()],
            &snaps,
            &log,
            &none.path().join(LIST),
            None,
        )
    }

    fn lost_task_1() -> Vec<Findings> {
        let w = Witness {
            kind: AnomalyKind::Lost,
            task: Some(TaskId(1)),
            text: "lost".into(),
            ops: vec![0],
            at: None,
            observation: false,
            target: None,
        };
        vec![
            Findings {
                witnesses: vec![w],
                ..Findings::default()
            },
            Findings::default(),
        ]
    }

    /// An update of task 1's metadata key `key` by `session` (writer `writer`), sent at
    /// `sent` ms and answered at `answered` ms (`None`: never answered).
    fn update(session: u32, writer: u32, key: &str, sent: u64, answered: Option<u64>) -> Operation {
        let mut patch = taskproof_core::task::Patch::default();
        let mut meta = serde_json::Map::new();
        meta.insert(key.into(), serde_json::json!(1));
        patch.metadata = taskproof_core::task::Change::Set(meta);
        Operation {
            index: 0,
            session,
            writer: Some(writer),
            request: Request::Update {
                list: list_name(),
                id: TaskId(1),
                patch,
            },
            invoke: Duration::from_millis(sent),
            completion: match answered {
                Some(at) => Completion::Ok {
                    at: Duration::from_millis(at),
                    task: None,
                },
                None => Completion::Info {
                    at: Duration::from_millis(1000),
                    reason: "killed".into(),
                },
            },
        }
    }

    fn get(session: u32, writer: u32, sent: u64, answered: u64) -> Operation {
        Operation {
            index: 0,
            session,
            writer: Some(writer),
            request: Request::Get {
                list: list_name(),
                id: TaskId(1),
            },
            invoke: Duration::from_millis(sent),
            completion: Completion::Ok {
                at: Duration::from_millis(answered),
                task: None,
            },
        }
    }

    fn history_of(ops: Vec<Operation>) -> History {
        let mut h = History::default();
        for op in ops {
            h.push(op);
        }
        h
    }

    /// The write that dropped a change is one of another session's writes of the task in
    /// flight while it was made, the checker's named request when it is one of them; a read,
    /// the change's own session and writes before or after it never are; with none in
    /// flight, the named request; with neither, none.
    #[test]
    fn the_dropping_request_is_a_write_in_flight_while_the_change_was_made() {
        let h = history_of(vec![
            update(2, 0, "w0_0", 10, Some(20)), // 0: the change, by the lead
            update(3, 1, "w1_0", 5, Some(8)),   // 1: w1, done before it was sent
            get(4, 2, 11, 15),                  // 2: a read meanwhile
            update(2, 0, "w0_1", 12, Some(14)), // 3: its own session
            update(3, 1, "w1_1", 12, Some(25)), // 4: w1, in flight
            update(5, 2, "w2_0", 15, None),     // 5: unanswered, sent before the ack
            update(3, 1, "w1_2", 21, Some(30)), // 6: w1, after the ack
        ]);
        let task = Some(TaskId(1));
        assert_eq!(
            dropping_request(&h, &[0], task),
            Some(4),
            "the first in flight"
        );
        assert_eq!(
            dropping_request(&h, &[0, 5], task),
            Some(5),
            "the named one, in flight"
        );
        assert_eq!(
            dropping_request(&h, &[0, 2], task),
            Some(4),
            "a named read is passed over for a write in flight"
        );
        let alone = history_of(vec![
            update(2, 0, "w0_0", 10, Some(20)),
            update(3, 1, "w1_0", 21, Some(30)),
        ]);
        assert_eq!(
            dropping_request(&alone, &[0, 1], task),
            Some(1),
            "named, none in flight"
        );
        assert_eq!(dropping_request(&alone, &[0], task), None);
    }

    /// A file of A's that ends holding B's task was replaced by B: the loss falls on the B
    /// writer whose create was last acknowledged with a task kept in a file of that name,
    /// even when B has several writers.
    #[test]
    fn a_replaced_file_falls_on_the_writer_whose_create_took_its_name() {
        let snaps = vec![
            ("before the run".to_string(), snap(&[])),
            (
                "after A's setup".to_string(),
                snap(&[("1.json", entry(FileKind::Json, Some("A: t")))]),
            ),
            (
                "after B's setup".to_string(),
                snap(&[("1.json", entry(FileKind::Json, Some("A: t")))]),
            ),
            (
                "at the end".to_string(),
                snap(&[("1.json", entry(FileKind::Json, Some("B: t")))]),
            ),
        ];
        let mut b = part_with_task_1(Layout::ClaudeCode, "B: t");
        let keys = KeyTable::default();
        for (writer, at) in [(3, 30), (2, 20)] {
            b.history.push(Operation {
                index: 0,
                session: writer + 2,
                writer: Some(writer),
                request: Request::Create {
                    list: list_name(),
                    task: NewTask::new("B: t"),
                },
                invoke: Duration::from_millis(at - 5),
                completion: Completion::Ok {
                    at: Duration::from_millis(at),
                    task: Some(TaskView::new(&Task::new(TaskId(1), "B: t"), &keys)),
                },
            });
        }
        let none = tempfile::tempdir().unwrap();
        let mut run = judge_files(
            Workload::Create,
            vec!["a".into(), "b".into()],
            vec![Layout::ClaudeCode, Layout::ClaudeCode],
            vec![true, true],
            vec![part_with_task_1(Layout::ClaudeCode, "A: t"), b],
            &[Vec::new(), Vec::new()],
            &snaps,
            &WatchLog::default(),
            &none.path().join(LIST),
            None,
        );
        assert_eq!(run.fates[0]["1.json"].what, "replaced");
        run.writers = [(0, Some("lead")), (0, Some("w1")), (1, None), (1, None)]
            .into_iter()
            .map(|(target, m)| WriterOf {
                target,
                member: m.map(str::to_string),
            })
            .collect();
        let findings = lost_task_1();
        let (_, mut charges) = charge(&run, &findings);
        assert_eq!(charges[0].charged_to, "b");
        let per = charge_writers(&run, &findings, &mut charges);
        assert_eq!(charges[0].charged_to_writer.as_deref(), Some("B writer 3"));
        assert_eq!(per[3].lost, 1);
    }

    /// Writers are named by target letter and member, with the team when a target has
    /// several, and by number otherwise.
    #[test]
    fn writers_are_labelled_by_team_and_member() {
        let mut run = judged(2, true);
        run.writers = [
            (0, Some("lead")),
            (0, Some("w1")),
            (0, Some("lead")),
            (0, Some("w1")),
            (1, None),
        ]
        .into_iter()
        .map(|(target, m)| WriterOf {
            target,
            member: m.map(str::to_string),
        })
        .collect();
        let labels: Vec<String> = (0..5).map(|w| writer_label(&run, w)).collect();
        assert_eq!(
            labels,
            [
                "A team 1 lead",
                "A team 1 w1",
                "A team 2 lead",
                "A team 2 w1",
                "B writer 4"
            ]
        );
        run.writers.drain(2..4);
        assert_eq!(writer_label(&run, 1), "A w1");
        assert_eq!(writer_label(&run, 2), "B writer 2");
    }

    /// The writers of a race of A's lead and w1 beside B's one writer.
    fn lead_w1_and_b() -> Vec<WriterOf> {
        let member = |target, member: Option<&str>| WriterOf {
            target,
            member: member.map(str::to_string),
        };
        vec![
            member(0, Some("lead")),
            member(0, Some("w1")),
            member(1, None),
        ]
    }

    /// Requests in flight while another writer's of the same target were are counted per
    /// writer; spans that only touch, or another target's, are not overlaps.
    #[test]
    fn overlapping_requests_are_counted_per_writer_within_its_target() {
        let mut run = judged(2, true);
        run.writers = lead_w1_and_b();
        for op in [
            update(2, 0, "w0_0", 10, Some(20)), // meets w1's 15..30
            update(2, 0, "w0_1", 30, Some(40)), // only touches 15..30 and 40..50
            update(3, 1, "w1_0", 15, Some(30)),
            update(3, 1, "w1_1", 40, Some(50)),
            update(2, 0, "w0_2", 45, None), // unanswered: in flight till the end
        ] {
            run.parts[0].history.push(op);
        }
        run.parts[1]
            .history
            .push(update(4, 2, "w2_0", 0, Some(100)));
        assert_eq!(overlapping(&run), [2, 2, 0]);
    }

    /// Per writer: a loss of A's own falls on the writer of the write in flight (w1 dropped
    /// the lead's change), one charged to B on B's only writer; each writer's requests and
    /// lost changes of its own are counted.
    #[test]
    fn each_loss_falls_on_the_writer_whose_write_dropped_it() {
        let mut run = judged(2, true);
        run.writers = lead_w1_and_b();
        for op in [
            update(2, 0, "w0_0", 10, Some(20)),
            update(3, 1, "w1_0", 12, Some(25)),
        ] {
            run.parts[0].history.push(op);
        }
        // The setup's create is op 0; the lead's change op 1, w1's write op 2.
        let lost = |ops: Vec<usize>| Witness {
            kind: AnomalyKind::Lost,
            task: Some(TaskId(1)),
            text: "lost".into(),
            ops,
            at: None,
            observation: false,
            target: None,
        };
        let findings = vec![
            Findings {
                witnesses: vec![lost(vec![1])],
                ..Findings::default()
            },
            Findings::default(),
        ];
        let (_, mut charges) = charge(&run, &findings);
        assert_eq!(charges[0].charged_to, "a");
        let per = charge_writers(&run, &findings, &mut charges);
        assert_eq!(charges[0].acknowledged_by_writer.as_deref(), Some("A lead"));
        assert_eq!(charges[0].charged_to_writer.as_deref(), Some("A w1"));
        let counts: Vec<(&str, usize, usize, usize)> = per
            .iter()
            .map(|w| (w.writer.as_str(), w.requests, w.lost, w.lost_of_its_own))
            .collect();
        assert_eq!(
            counts,
            [
                ("A lead", 1, 0, 1),
                ("A w1", 1, 1, 0),
                ("B writer 2", 0, 0, 0)
            ]
        );
        // The file gone while only B's setup ran: B's doing, and B has one writer.
        let mut run_b = judged(1, true);
        run_b.writers = run.writers.clone();
        run_b.parts[0]
            .history
            .push(update(2, 0, "w0_0", 10, Some(20)));
        let (_, mut charges) = charge(&run_b, &findings);
        assert_eq!(charges[0].charged_to, "b");
        let per = charge_writers(&run_b, &findings, &mut charges);
        assert_eq!(charges[0].charged_to_writer.as_deref(), Some("B writer 2"));
        assert_eq!((per[0].lost_of_its_own, per[2].lost), (1, 1));
        // Without a team among the writers nothing is charged per writer.
        run_b.writers[0].member = None;
        run_b.writers[1].member = None;
        assert!(charge_writers(&run_b, &findings, &mut charges).is_empty());
    }

    #[test]
    fn a_file_gone_while_only_the_other_target_ran_is_its_doing() {
        let run = judged(1, true);
        let fate = &run.fates[0]["1.json"];
        assert_eq!((fate.what, fate.by), ("removed", Some(1)));
        assert_eq!(fate.when, "during B's setup, alone");
        let (per, charges) = charge(&run, &lost_task_1());
        assert_eq!(charges[0].charged_to, "b");
        assert_eq!((per[0].lost, per[1].lost, per[1].lost_of_others), (0, 1, 1));
        // A's setup left `.lock` empty and B's, alone, deleted it.
        assert!(
            run.files
                .effects
                .iter()
                .any(|e| e.by.as_deref() == Some("b")
                    && e.on == "a"
                    && e.what == "deleted"
                    && e.file == ".lock")
        );
    }

    #[test]
    fn a_file_gone_during_the_race_is_put_on_the_other_only_when_its_own_target_cannot_act() {
        // A runs in-process: it removes a file only inside a request, and sent no delete.
        let run = judged(2, false);
        assert_eq!(run.fates[0]["1.json"].by, Some(1));
        assert_eq!(charge(&run, &lost_task_1()).1[0].charged_to, "b");
        // A's sessions are processes too: the evidence cannot tell, so the loss is A's.
        let run = judged(2, true);
        let fate = &run.fates[0]["1.json"];
        assert_eq!((fate.what, fate.by), ("removed", None));
        let (per, charges) = charge(&run, &lost_task_1());
        assert_eq!(charges[0].charged_to, "a");
        assert_eq!((per[0].lost_own, per[1].lost), (1, 0));
        assert!(
            run.files
                .effects
                .iter()
                .any(|e| e.by.is_none() && e.on == "a" && e.what == "removed"),
            "{:?}",
            run.files.effects
        );
    }
}
