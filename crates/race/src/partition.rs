//! The partition of a race history into one sub-history per task, for the per-task model
//! ([`crate::sequential`]) and the linearizability check ([`crate::linear`]).
//!
//! Partitioning per task keeps the search small, at a price stated here once: a request that
//! touches two tasks (an edge addition mirrors into the other task, S8) becomes an observed
//! operation on the task it addresses and an unobserved *effect* on the other, and the two
//! are placed independently, so a store that applies one half much later than the other is
//! not caught by this check (the half-edge count catches one that never applies it).
//! Failures that depend on other tasks (`blocked`, `cycle`, `dangling`) cannot be judged on
//! one task and are left out; so is `ready` when judging a claim. Failures that do not
//! describe the request (`io`, `corrupt`, `invalid`, `unsupported`) are counted by the
//! checker, not modelled, and are taken to have changed nothing.
//!
//! A delete is an operation on the task it addresses (which then stays absent: a deleted
//! task that an answer or the final listing shows again is not linearizable) and, like an
//! edge change, an unobserved effect on every task the history ever links with it: the
//! strict store removes the deleted task from its neighbours' edges (S10).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use crate::history::{Completion, History, TaskView};
use crate::linear::Entry;
use crate::sequential::{Action, Expect, FastHash, TaskOp};
use taskproof_core::protocol::{ErrorKind, Request};
use taskproof_core::task::{Change, Task, TaskId};

/// Failure kinds the per-task model judges; every other one is left out of the partition.
fn judged(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::NotFound | ErrorKind::Conflict | ErrorKind::Transition
    )
}

/// The final listing as views, one per listed task, for [`partition`] to borrow.
pub fn final_views(history: &History, final_tasks: &[Task]) -> Vec<TaskView> {
    final_tasks
        .iter()
        .map(|t| TaskView::new(t, &history.keys))
        .collect()
}

/// Splits the history into one sub-history per task, adding the final listing (`listed`,
/// from [`final_views`]) as a read of every task at `end` (after every answered
/// operation). Each sub-history is then to be pruned ([`prune_unobserved`]), which is left
/// to the caller so that it runs task by task beside the searches.
pub fn partition<'h>(
    history: &'h History,
    listed: &'h [TaskView],
    end: Duration,
) -> BTreeMap<TaskId, Vec<Entry<TaskOp<'h>>>> {
    let mut parts: BTreeMap<TaskId, Vec<Entry<TaskOp<'h>>>> = BTreeMap::new();
    // Each task's list is given its room at once (at most one entry per task an operation
    // names): grown entry by entry, the lists were copied over and over.
    let mut room: BTreeMap<TaskId, usize> = BTreeMap::new();
    let neighbours = linked(history);
    for op in &history.ops {
        if let Request::Delete { id, .. } = &op.request {
            for n in neighbours.get(id).into_iter().flatten() {
                *room.entry(*n).or_default() += 1;
            }
        }
        let named: [&[TaskId]; 4] = match &op.request {
            Request::Create { task, .. } => [&task.blocked_by, &task.blocks, &[], &[]],
            Request::Update { patch, .. } => [
                &patch.add_blocked_by,
                &patch.add_blocks,
                &patch.remove_blocked_by,
                &patch.remove_blocks,
            ],
            _ => [&[]; 4],
        };
        for id in op.task_id().iter().chain(named.into_iter().flatten()) {
            *room.entry(*id).or_default() += 1;
        }
    }
    for (id, n) in room {
        parts.insert(id, Vec::with_capacity(n + 1));
    }
    for op in &history.ops {
        let (expect, complete) = match &op.completion {
            Completion::Ok { at, .. } => (Expect::Ok(op.answer()), Some(*at)),
            Completion::Fail { at, kind, .. } if judged(*kind) => (Expect::Fail(*kind), Some(*at)),
            Completion::Fail { .. } => continue,
            Completion::Info { at, .. } => (Expect::Unknown, history.info_bounded.then_some(*at)),
        };
        let optional = matches!(expect, Expect::Unknown);
        let mut push = |id: TaskId, action: Action<'h>, expect: Expect<'h>| {
            parts.entry(id).or_default().push(Entry {
                op: TaskOp {
                    history_index: Some(op.index),
                    action,
                    expect,
                },
                invoke: op.invoke,
                complete,
                optional,
            });
        };
        // Effects on the other side of an edge are unobserved, and only exist for requests
        // that may have succeeded.
        let effects = matches!(expect, Expect::Ok(_) | Expect::Unknown);
        let side = |e: &Expect| match e {
            Expect::Ok(_) => Expect::Ok(None),
            _ => Expect::Unknown,
        };
        match &op.request {
            Request::Create { task, .. } => {
                // An unanswered create has no known id; it is judged by the final listing.
                let Some(id) = op.task_id() else { continue };
                if effects {
                    for &b in &task.blocked_by {
                        push(b, edge(true, true, id), side(&expect));
                    }
                    for &b in &task.blocks {
                        push(b, edge(true, false, id), side(&expect));
                    }
                }
                let metadata = history.pair_slice(op);
                push(id, Action::Create { task, metadata }, expect);
            }
            Request::Update { id, patch, .. } => {
                if effects {
                    for &x in &patch.add_blocked_by {
                        push(x, edge(true, true, *id), side(&expect));
                    }
                    for &x in &patch.add_blocks {
                        push(x, edge(true, false, *id), side(&expect));
                    }
                    for &x in &patch.remove_blocked_by {
                        push(x, edge(false, true, *id), side(&expect));
                    }
                    for &x in &patch.remove_blocks {
                        push(x, edge(false, false, *id), side(&expect));
                    }
                }
                let metadata_set = match &patch.metadata {
                    Change::Set(_) => history.pair_slice(op),
                    Change::Remove | Change::Keep => Cow::Borrowed(&[][..]),
                };
                push(
                    *id,
                    Action::Update {
                        patch,
                        metadata_set,
                    },
                    expect,
                );
            }
            Request::Claim { id, owner, .. } => push(*id, Action::Claim { owner }, expect),
            Request::Delete { id, .. } => {
                if effects {
                    for &n in neighbours.get(id).into_iter().flatten() {
                        push(n, Action::Unlink { other: *id }, side(&expect));
                    }
                }
                push(*id, Action::Delete, expect);
            }
            Request::Get { id, .. } => {
                if matches!(expect, Expect::Ok(_) | Expect::Fail(_)) {
                    push(*id, Action::Read, expect)
                }
            }
            // Workloads do not list mid-run; hello reads nothing.
            Request::List { .. } | Request::Hello => {}
        }
    }
    // Tasks that were only named by operations that left no entry.
    parts.retain(|_, entries| !entries.is_empty());
    // The last view of an id listed twice, as a map from id keeps it.
    let listed: BTreeMap<TaskId, &TaskView> = listed.iter().map(|t| (t.id, t)).collect();
    // An unanswered create has no known id: it may be any listed task that no answered
    // create accounts for and that has its subject.
    // Indexed by subject, in history order: looking them up per listed task costs what they
    // match, not every unanswered create of the run.
    let mut unanswered_creates: HashMap<&str, Vec<_>> = HashMap::new();
    for o in history.ops.iter().filter(|o| o.is_info()) {
        if let Request::Create { task, .. } = &o.request {
            unanswered_creates
                .entry(task.subject.as_str())
                .or_default()
                .push((o, task));
        }
    }
    for (id, t) in &listed {
        let entries = parts.entry(*id).or_default();
        if entries
            .iter()
            .any(|e| matches!(e.op.action, Action::Create { .. }))
        {
            continue;
        }
        for (o, new) in unanswered_creates
            .get(t.subject.as_str())
            .into_iter()
            .flatten()
        {
            entries.push(Entry {
                op: TaskOp {
                    history_index: Some(o.index),
                    action: Action::Create {
                        task: new,
                        metadata: history.pair_slice(o),
                    },
                    expect: Expect::Unknown,
                },
                invoke: o.invoke,
                complete: history.info_bounded.then(|| o.completion.at()),
                optional: true,
            });
        }
    }
    for (id, entries) in parts.iter_mut() {
        let expect = match listed.get(id) {
            Some(t) => Expect::Ok(Some(*t)),
            None => Expect::Absent,
        };
        entries.push(Entry {
            op: TaskOp {
                history_index: None,
                action: Action::Read,
                expect,
            },
            invoke: end,
            complete: Some(end),
            optional: false,
        });
    }
    parts
}

/// Drops unanswered updates whose effect no answer ever shows: each sets only metadata
/// values, subjects or activeForms (no other operation's outcome depends on those) that no
/// answered view of the task, the final listing included, holds. Such an operation never
/// helps explain the history, so leaving it out changes no verdict, and it spares the
/// search from trying it at every point (each one would double the configurations to try
/// when proving a history wrong).
pub fn prune_unobserved(entries: &mut Vec<Entry<TaskOp<'_>>>) {
    // Only pairs that unanswered updates set need looking for in the answers: a bit per
    // pair up to the highest of those, marked from each answer's sorted pairs until it
    // passes that (every answer holds the task's whole metadata; collecting all of it into
    // a set cost more than the search).
    let top = entries
        .iter()
        .filter(|e| matches!(e.op.expect, Expect::Unknown))
        .filter_map(|e| match &e.op.action {
            Action::Update { metadata_set, .. } => metadata_set.iter().max(),
            _ => None,
        })
        .max()
        .map(|&t| t as usize);
    let mut pairs = vec![0u64; top.map_or(0, |t| t / 64 + 1)];
    let mut subjects: HashSet<&str, FastHash> = HashSet::default();
    let mut forms: HashSet<&str, FastHash> = HashSet::default();
    for e in entries.iter() {
        if let Expect::Ok(Some(v)) = e.op.expect {
            if let Some(top) = top {
                // Every answer holds the task's whole metadata: this loop runs over every
                // pair of every answer, so it is kept to a shift and an or.
                let held = v.metadata.as_slice();
                let upto = held.partition_point(|&p| p as usize <= top);
                for &p in &held[..upto] {
                    pairs[p as usize / 64] |= 1 << (p % 64);
                }
            }
            subjects.insert(v.subject.as_str());
            forms.extend(v.active_form.as_deref());
        }
    }
    entries.retain(|e| {
        let Expect::Unknown = e.op.expect else {
            return true;
        };
        let Action::Update {
            patch,
            metadata_set,
        } = &e.op.action
        else {
            return true;
        };
        if patch.status.is_some()
            || patch.owner != Change::Keep
            || matches!(patch.metadata, Change::Remove)
        {
            return true;
        }
        let edges = !(patch.add_blocks.is_empty()
            && patch.add_blocked_by.is_empty()
            && patch.remove_blocks.is_empty()
            && patch.remove_blocked_by.is_empty());
        let seen = metadata_set
            .iter()
            .map(|&p| p as usize)
            .any(|p| pairs.get(p / 64).is_some_and(|w| w & (1 << (p % 64)) != 0))
            || patch
                .subject
                .as_deref()
                .is_some_and(|x| subjects.contains(x))
            || match &patch.active_form {
                Change::Keep => false,
                Change::Set(a) => forms.contains(a.as_str()),
                Change::Remove => true,
            };
        edges || seen
    });
}

/// Every pair of tasks some request of the history links (an edge given at create or
/// added by an update), both ways: the tasks a delete may have to unlink.
fn linked(history: &History) -> HashMap<TaskId, Vec<TaskId>, FastHash> {
    let mut out: HashMap<TaskId, Vec<TaskId>, FastHash> = HashMap::default();
    let mut link = |a: TaskId, b: TaskId| {
        for (x, y) in [(a, b), (b, a)] {
            let v = out.entry(x).or_default();
            if !v.contains(&y) {
                v.push(y);
            }
        }
    };
    for op in &history.ops {
        let (Some(id), others): (Option<TaskId>, [&[TaskId]; 2]) = (match &op.request {
            Request::Create { task, .. } => (op.task_id(), [&task.blocked_by, &task.blocks]),
            Request::Update { id, patch, .. } => {
                (Some(*id), [&patch.add_blocked_by, &patch.add_blocks])
            }
            _ => (None, [&[]; 2]),
        }) else {
            continue;
        };
        for &x in others.into_iter().flatten() {
            link(id, x);
        }
    }
    out
}

fn edge(add: bool, in_blocks: bool, other: TaskId) -> Action<'static> {
    Action::Edge {
        add,
        in_blocks,
        other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::PairSet;
    use std::collections::BTreeSet;
    use taskproof_core::task::{Patch, Status};

    fn update(metadata_set: Vec<u32>, owner: Change<&'static str>) -> Action<'static> {
        let patch = Patch {
            owner: match owner {
                Change::Keep => Change::Keep,
                Change::Set(o) => Change::Set(o.to_string()),
                Change::Remove => Change::Remove,
            },
            ..Patch::default()
        };
        Action::Update {
            patch: Box::leak(Box::new(patch)),
            metadata_set: Cow::Owned(metadata_set),
        }
    }

    fn entry(action: Action<'static>, expect: Expect<'static>) -> Entry<TaskOp<'static>> {
        let optional = matches!(expect, Expect::Unknown);
        Entry {
            op: TaskOp {
                history_index: Some(0),
                action,
                expect,
            },
            invoke: Duration::ZERO,
            complete: None,
            optional,
        }
    }

    #[test]
    fn unanswered_updates_nobody_observed_are_dropped() {
        let mut seen = PairSet::default();
        seen.insert(1);
        let view = TaskView {
            id: TaskId(1),
            subject: "s".into(),
            status: Status::Pending,
            owner: None,
            active_form: None,
            blocks: BTreeSet::new(),
            blocked_by: BTreeSet::new(),
            metadata: seen,
            foreign: false,
        };
        let mut entries = vec![
            entry(update(vec![0], Change::Keep), Expect::Unknown),
            entry(update(vec![1], Change::Keep), Expect::Unknown),
            // An owner decides later claims, so it is kept even when never read back.
            entry(update(vec![], Change::Set("x")), Expect::Unknown),
            entry(Action::Read, Expect::Ok(Some(Box::leak(Box::new(view))))),
        ];
        prune_unobserved(&mut entries);
        let kept: Vec<&Action> = entries.iter().map(|e| &e.op.action).collect();
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[0], &update(vec![1], Change::Keep));
    }
}
