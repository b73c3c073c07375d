//! The checker: counts the anomalies of a race run from its history and the final state,
//! and explains each with a minimal witness in plain words.
//!
//! Each check is a function of the history and the final listing, so other parts of the
//! project (the runner's `concurrent` blocks) can call the one they need, e.g.
//! [`lost_metadata`] for "every acknowledged metadata key survives".

mod anomaly;
mod lost;

use std::time::Duration;

pub use anomaly::{AnomalyKind, Findings, LinSummary, TornRead, Witness};
pub use lost::{claims, duplicate_ids, lost_creates, lost_edges, lost_fields, lost_metadata};
use lost::{edge_changes, field_writes, show};

use crate::history::{Completion, History, secs};
use crate::linear::{self, Verdict};
use crate::partition::{final_views, partition, prune_unobserved};
use crate::sequential::SequentialTask;
use taskproof_core::graph::Graph;
use taskproof_core::protocol::Request;
use taskproof_core::task::{Change, Task, TaskId};

/// What the checker is given besides the history.
pub struct FinalState<'a> {
    pub tasks: &'a [Task],
    /// Task files that could not be read at the end: named by the listing's `corrupt`, or
    /// found unparseable by the harness's own scan of the folder, with the reason.
    pub corrupt: &'a [(String, String)],
    pub torn: &'a [TornRead],
    /// When the final listing was taken.
    pub end: Duration,
}

/// Runs every check.
pub fn check_all(history: &History, fin: &FinalState<'_>, lin_budget: u64) -> Findings {
    let mut f = Findings::default();
    for k in AnomalyKind::ALL {
        f.counts.insert(k, 0);
    }
    // The linearizability search runs beside the other checks (it is most of the work, and
    // spreads over the cores itself); the witnesses keep their order.
    let (others, (lin, ws)) = rayon::join(
        || {
            [
                lost_metadata(history, fin.tasks),
                lost_fields(history, fin.tasks),
                lost_creates(history, fin.tasks),
                duplicate_ids(history, fin.tasks),
                claims(history, fin.tasks),
                lost_edges(history, fin.tasks),
                torn_writes(fin.torn),
                corrupt_files(fin.corrupt),
                graph_anomalies(fin.tasks),
            ]
        },
        || linearizability(history, fin.tasks, fin.end, lin_budget),
    );
    for ws in others {
        f.add(ws);
    }
    f.lin = lin;
    f.add(ws);
    f
}

/// One witness per torn state of a file.
pub fn torn_writes(torn: &[TornRead]) -> Vec<Witness> {
    torn.iter()
        .map(|t| {
            let again = match t.reads {
                0 | 1 => String::new(),
                n => format!("; {n} raw reads saw this same state"),
            };
            Witness::new(
                AnomalyKind::TornWrites,
                None,
                format!(
                    "raw reader {} read {} at {}: {} bytes that do not parse ({}){again}",
                    t.reader,
                    t.file,
                    secs(t.at),
                    t.len,
                    t.error
                ),
                Vec::new(),
            )
        })
        .collect()
}

pub fn corrupt_files(corrupt: &[(String, String)]) -> Vec<Witness> {
    corrupt
        .iter()
        .map(|(name, why)| {
            Witness::new(
                AnomalyKind::CorruptFiles,
                None,
                format!("{name} is unreadable at the end: {why}"),
                Vec::new(),
            )
        })
        .collect()
}

/// Cycles and half edges in the final state.
pub fn graph_anomalies(final_tasks: &[Task]) -> Vec<Witness> {
    let g = Graph::new(final_tasks);
    let mut out = Vec::new();
    for c in g.cycles() {
        out.push(Witness::new(
            AnomalyKind::Cycles,
            c.first().copied(),
            format!(
                "in the final state, {}",
                taskproof_core::graph::cycle_words(&c)
            ),
            Vec::new(),
        ));
    }
    for h in g.half_edges() {
        let text = h.words(taskproof_core::graph::task_name);
        out.push(Witness::new(
            AnomalyKind::HalfEdges,
            Some(h.blocked),
            text,
            Vec::new(),
        ));
    }
    out
}

/// Checks each task's history against the sequential model, in parallel over tasks.
pub fn linearizability(
    history: &History,
    final_tasks: &[Task],
    end: Duration,
    budget: u64,
) -> (LinSummary, Vec<Witness>) {
    use rayon::prelude::*;
    let listed = final_views(history, final_tasks);
    let parts: Vec<_> = partition(history, &listed, end).into_iter().collect();
    let verdicts: Vec<(TaskId, Verdict, Option<usize>)> = parts
        .into_par_iter()
        .map(|(id, mut entries)| {
            prune_unobserved(&mut entries);
            let model = SequentialTask::new(id, &history.keys, &entries);
            let v = linear::check(&model, &entries, budget);
            let stuck = match &v {
                Verdict::NotLinearizable { stuck, .. } => entries[*stuck].op.history_index,
                _ => None,
            };
            (id, v, stuck)
        })
        .collect();
    let mut sum = LinSummary {
        tasks: verdicts.len(),
        ..LinSummary::default()
    };
    let mut out = Vec::new();
    for (id, v, stuck) in verdicts {
        match v {
            Verdict::Linearizable { steps } => {
                sum.linearizable += 1;
                sum.steps += steps;
            }
            Verdict::Unknown { steps } => {
                sum.unknown += 1;
                sum.steps += steps;
                sum.unknown_tasks.push(id);
            }
            Verdict::NotLinearizable {
                prefix,
                reason,
                steps,
                ..
            } => {
                sum.nonlinearizable += 1;
                sum.steps += steps;
                let what = match stuck.map(|i| &history.ops[i]) {
                    Some(op) => format!(
                        "{}'s {} (sent at {}, {})",
                        op.who(),
                        describe_request(&op.request),
                        secs(op.invoke),
                        match &op.completion {
                            Completion::Ok { at, .. } => format!("answered ok at {}", secs(*at)),
                            Completion::Fail { at, kind, .. } =>
                                format!("refused with {kind} at {}", secs(*at)),
                            Completion::Info { .. } => "never answered".into(),
                        }
                    ),
                    None => "the final listing".into(),
                };
                let mut ops: Vec<usize> = stuck.into_iter().collect();
                let back = match revival(history, id, final_tasks) {
                    Some((text, named)) => {
                        ops.extend(named.into_iter().filter(|i| Some(*i) != stuck));
                        text
                    }
                    None => String::new(),
                };
                out.push(Witness::new(
                    AnomalyKind::Nonlinearizable,
                    Some(id),
                    format!(
                        "no sequential order explains task {id}'s history: after {prefix} operations placed in real-time order, {what} fits nowhere: {reason}{back}"
                    ),
                    ops,
                ));
            }
        }
    }
    (sum, out)
}

/// When task `id` was deleted with an acknowledged delete and is seen again after it (in
/// the final listing, or in the answer of a request sent after the delete's
/// acknowledgement), the sentence that says so and names the write that brought it back:
/// the acknowledged write in flight across the delete that was answered last (preferring
/// one whose answer is what the final listing shows), and the first acknowledged write
/// sent after the delete was acknowledged (which had to be refused). With the history
/// indices it names.
fn revival(history: &History, id: TaskId, final_tasks: &[Task]) -> Option<(String, Vec<usize>)> {
    let del = history
        .ops
        .iter()
        .filter(|o| o.is_ok() && matches!(o.request, Request::Delete { id: d, .. } if d == id))
        .min_by_key(|o| o.completion.at())?;
    let gone = del.completion.at();
    let writes: Vec<&crate::history::Operation> = history
        .ops
        .iter()
        .filter(|o| o.index != del.index && o.task_id() == Some(id) && o.answer().is_some())
        .filter(|o| matches!(o.request, Request::Update { .. } | Request::Claim { .. }))
        .collect();
    let listed = final_tasks.iter().find(|t| t.id == id);
    let seen_after = history
        .ops
        .iter()
        .filter(|o| o.task_id() == Some(id) && o.invoke > gone && o.is_ok())
        .min_by_key(|o| o.invoke);
    let evidence = match (listed, seen_after) {
        (Some(t), _) => format!(
            "the final listing still holds it (status {}{})",
            t.status,
            t.owner
                .as_ref()
                .map(|o| format!(", owner {o:?}"))
                .unwrap_or_default()
        ),
        (None, Some(o)) => format!(
            "{}'s {} sent at {} succeeded on it",
            o.who(),
            describe_request(&o.request),
            secs(o.invoke)
        ),
        (None, None) => return None,
    };
    let view = listed.map(|t| crate::history::TaskView::new(t, &history.keys));
    let after = writes
        .iter()
        .filter(|o| o.invoke > gone)
        .min_by_key(|o| o.invoke);
    let across = writes
        .iter()
        .filter(|o| o.invoke <= gone && o.completion.at() >= del.invoke)
        .max_by_key(|o| {
            (
                view.is_some() && o.answer() == view.as_ref(),
                o.completion.at(),
            )
        });
    let mut named = vec![del.index];
    let mut culprit = String::new();
    if let Some(w) = across {
        named.push(w.index);
        culprit += &format!(
            "; {}'s {} (sent at {}, answered ok at {}) was in flight across the delete and wrote the task back",
            w.who(),
            describe_request(&w.request),
            secs(w.invoke),
            secs(w.completion.at())
        );
    }
    if let Some(w) = after {
        named.push(w.index);
        culprit += &format!(
            "; {}'s {} (sent at {}, after the delete was acknowledged) succeeded on the deleted task",
            w.who(),
            describe_request(&w.request),
            secs(w.invoke)
        );
    }
    if culprit.is_empty() {
        culprit =
            "; no answered write shows which request brought it back (an unanswered one)".into();
    }
    Some((
        format!(
            "; {} deleted task {id} (acknowledged at {}), and {evidence}{culprit}",
            del.who(),
            secs(gone)
        ),
        named,
    ))
}

/// Every task deleted with an acknowledged delete that is seen again afterwards: held by
/// the final listing, or found by a request sent after the delete was acknowledged that
/// succeeded (which had to be refused). A check of its own for callers that do not have the
/// task's whole history (a scenario's `concurrent` block, whose tasks were created before
/// it); [`linearizability`] judges the same within a race, against the per-task model.
pub fn revived(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let deleted: std::collections::BTreeSet<TaskId> = history
        .ops
        .iter()
        .filter(|o| o.is_ok())
        .filter_map(|o| match o.request {
            Request::Delete { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    deleted
        .into_iter()
        .filter_map(|id| {
            let (text, ops) = revival(history, id, final_tasks)?;
            Some(Witness::new(
                AnomalyKind::Nonlinearizable,
                Some(id),
                format!(
                    "task {id} came back after its delete: {}",
                    text.trim_start_matches("; ")
                ),
                ops,
            ))
        })
        .collect()
}

/// A request in a few words.
pub fn describe_request(r: &Request) -> String {
    match r {
        Request::Create { task, .. } => format!("create {:?}", task.subject),
        Request::Get { id, .. } => format!("get of task {id}"),
        Request::Claim { id, owner, .. } => format!("claim of task {id} as {owner:?}"),
        Request::Delete { id, .. } => format!("delete of task {id}"),
        Request::List { .. } => "list".into(),
        Request::Hello => "hello".into(),
        Request::Update { id, patch, .. } => {
            let mut parts = Vec::new();
            if let Change::Set(m) = &patch.metadata {
                let keys: Vec<&str> = m.keys().map(String::as_str).collect();
                parts.push(format!("metadata.{}", keys.join(",")));
            }
            for (f, v) in field_writes(r) {
                parts.push(format!("{f} {}", show(&v)));
            }
            for ((a, b), add) in edge_changes(r) {
                parts.push(format!(
                    "{} edge {a} blocks {b}",
                    if add { "add" } else { "remove" }
                ));
            }
            format!("update of task {id} ({})", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    //! Deletes in the per-task model, on hand-made histories: the store of issue 53 whose
    //! delete takes no lock lets an update that read the task before the delete write it
    //! back after the delete was acknowledged.
    use super::*;
    use serde_json::json;
    use taskproof_core::protocol::{ErrorKind, Failure, Response};
    use taskproof_core::task::{ListName, NewTask, Patch};

    fn list() -> ListName {
        "race".parse().unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn update(key: &str) -> Request {
        let mut m = serde_json::Map::new();
        m.insert(key.into(), json!(1));
        Request::Update {
            list: list(),
            id: TaskId(1),
            patch: Patch {
                metadata: Change::Set(m),
                ..Patch::default()
            },
        }
    }

    fn delete() -> Request {
        Request::Delete {
            list: list(),
            id: TaskId(1),
        }
    }

    fn claim(owner: &str) -> Request {
        Request::Claim {
            list: list(),
            id: TaskId(1),
            owner: owner.into(),
        }
    }

    fn with_key(key: &str) -> Task {
        let mut t = Task::new(TaskId(1), "doomed");
        t.metadata = Some(json!({ key: 1 }).as_object().unwrap().clone());
        t
    }

    fn not_found() -> Response {
        Response::Error(Failure::new(ErrorKind::NotFound, "no task 1"))
    }

    /// Task 1 created by the setup session at 0-1 ms, then `ops` as (session, request,
    /// invoke ms, answer ms, answer).
    fn history(ops: Vec<(u32, Request, u64, u64, Response)>) -> History {
        let mut h = History {
            info_bounded: true,
            ..History::default()
        };
        for (_, r, ..) in &ops {
            h.intern_request(r);
        }
        let create = Request::Create {
            list: list(),
            task: NewTask::new("doomed"),
        };
        let created = Task::new(TaskId(1), "doomed");
        h.record(0, None, create, ms(0), ms(1), Ok(Response::Task(created)));
        for (s, r, i, a, answer) in ops {
            h.record(s, Some(s - 1), r, ms(i), ms(a), Ok(answer));
        }
        h
    }

    fn judge(h: &History, fin: &[Task]) -> Findings {
        let fin = FinalState {
            tasks: fin,
            corrupt: &[],
            torn: &[],
            end: ms(100),
        };
        check_all(h, &fin, 1_000_000)
    }

    #[test]
    fn an_update_answered_after_the_delete_may_have_come_first() {
        // The update overlaps the delete and is answered after it: ordered before the
        // delete, both are right, and the task is gone at the end.
        let h = history(vec![
            (1, update("a"), 2, 9, Response::Task(with_key("a"))),
            (2, delete(), 3, 5, Response::Done),
            (1, update("b"), 10, 11, not_found()),
        ]);
        let f = judge(&h, &[]);
        assert_eq!(f.total(), 0, "{:?}", f.witnesses);
        assert_eq!(f.lin.linearizable, 1);
    }

    #[test]
    fn a_deleted_task_written_back_is_caught_and_its_writer_named() {
        // The same history, but the final listing holds the task the update wrote: no
        // order explains a task deleted with an acknowledged delete that is there again.
        let h = history(vec![
            (1, update("a"), 2, 9, Response::Task(with_key("a"))),
            (2, delete(), 3, 5, Response::Done),
        ]);
        let f = judge(&h, &[with_key("a")]);
        assert_eq!(
            f.count(AnomalyKind::Nonlinearizable),
            1,
            "{:?}",
            f.witnesses
        );
        let w = &f.witnesses[0];
        assert!(
            w.text.contains("session 2 (writer 1) deleted task 1 (acknowledged at 0.005 s)")
                && w.text.contains("the final listing still holds it")
                && w.text.contains(
                    "session 1 (writer 0)'s update of task 1 (metadata.a) (sent at 0.002 s, answered ok at 0.009 s) was in flight across the delete and wrote the task back"
                ),
            "{}",
            w.text
        );
        assert!(w.ops.contains(&1) && w.ops.contains(&2), "{:?}", w.ops);
        // A value the deleted task held is not a lost update.
        assert_eq!(f.count(AnomalyKind::Lost), 0, "{:?}", f.witnesses);
    }

    #[test]
    fn an_update_sent_after_the_delete_was_acknowledged_must_fail() {
        let h = history(vec![
            (2, delete(), 3, 5, Response::Done),
            (1, update("a"), 6, 7, Response::Task(with_key("a"))),
        ]);
        let f = judge(&h, &[]);
        assert_eq!(
            f.count(AnomalyKind::Nonlinearizable),
            1,
            "{:?}",
            f.witnesses
        );
        let w = &f.witnesses[0];
        assert!(
            w.text.contains("had to fail (not_found)")
                && w.text
                    .contains("after the delete was acknowledged) succeeded on the deleted task"),
            "{}",
            w.text
        );
    }

    #[test]
    fn a_claim_racing_a_delete_may_win_but_the_task_stays_deleted() {
        let mut owned = Task::new(TaskId(1), "doomed");
        owned.owner = Some("w0".into());
        owned.status = taskproof_core::task::Status::InProgress;
        let ops = vec![
            (1, claim("w0"), 2, 9, Response::Task(owned.clone())),
            (2, delete(), 3, 5, Response::Done),
            (3, claim("w2"), 6, 7, not_found()),
        ];
        let f = judge(&history(ops.clone()), &[]);
        assert_eq!(f.total(), 0, "{:?}", f.witnesses);
        // The deleted task back, owned: caught, and the claim named.
        let f = judge(&history(ops), &[owned]);
        assert_eq!(
            f.count(AnomalyKind::Nonlinearizable),
            1,
            "{:?}",
            f.witnesses
        );
        let w = &f.witnesses[0].text;
        assert!(
            w.contains("still holds it (status in_progress, owner \"w0\")")
                && w.contains("claim of task 1 as \"w0\"")
                && w.contains("wrote the task back"),
            "{w}"
        );
    }

    #[test]
    fn revived_names_a_deleted_task_listed_again_or_found_after_its_delete() {
        let overlapping = vec![
            (1, update("a"), 2, 9, Response::Task(with_key("a"))),
            (2, delete(), 3, 5, Response::Done),
        ];
        let h = history(overlapping);
        assert!(revived(&h, &[]).is_empty());
        let w = revived(&h, &[with_key("a")]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].text.starts_with(
                "task 1 came back after its delete: session 2 (writer 1) deleted task 1"
            ) && w[0].text.contains("wrote the task back"),
            "{}",
            w[0].text
        );
        // Refused after the delete, as it must be: nothing came back.
        let h = history(vec![
            (2, delete(), 3, 5, Response::Done),
            (1, update("a"), 6, 7, not_found()),
        ]);
        assert!(revived(&h, &[]).is_empty());
        // Answered after the delete was acknowledged, though the listing lacks it again.
        let h = history(vec![
            (2, delete(), 3, 5, Response::Done),
            (1, update("a"), 6, 7, Response::Task(with_key("a"))),
        ]);
        let w = revived(&h, &[]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].text.contains("succeeded on"), "{}", w[0].text);
    }

    #[test]
    fn a_delete_unlinks_its_neighbours_and_its_id_is_never_given_again() {
        // Task 2 is created blocked by task 1; deleting task 1 removes the edge from task 2
        // (S10), and a create answered with id 1 afterwards is a reused id.
        let mut h = History::default();
        let mut blocked = NewTask::new("two");
        blocked.blocked_by = vec![TaskId(1)];
        let mut two = Task::new(TaskId(2), "two");
        two.blocked_by.insert(TaskId(1));
        let mut one = Task::new(TaskId(1), "doomed");
        one.blocks.insert(TaskId(2));
        let create = |t: NewTask| Request::Create {
            list: list(),
            task: t,
        };
        h.record(
            0,
            None,
            create(NewTask::new("doomed")),
            ms(0),
            ms(1),
            Ok(Response::Task(Task::new(TaskId(1), "doomed"))),
        );
        h.record(
            0,
            None,
            create(blocked),
            ms(1),
            ms(2),
            Ok(Response::Task(two)),
        );
        h.record(1, Some(0), delete(), ms(3), ms(4), Ok(Response::Done));
        let unlinked = Task::new(TaskId(2), "two");
        let f = judge(&h, std::slice::from_ref(&unlinked));
        assert_eq!(f.total(), 0, "{:?}", f.witnesses);
        h.record(
            1,
            Some(0),
            create(NewTask::new("again")),
            ms(5),
            ms(6),
            Ok(Response::Task(Task::new(TaskId(1), "again"))),
        );
        let f = judge(&h, &[unlinked, Task::new(TaskId(1), "again")]);
        assert_eq!(
            f.count(AnomalyKind::Nonlinearizable),
            1,
            "{:?}",
            f.witnesses
        );
    }
}
