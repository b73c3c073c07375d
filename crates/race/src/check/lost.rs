//! The checks of acknowledged changes against the final listing: every metadata value,
//! field, create, claim and edge an acknowledged request made must be there at the end,
//! unless a later or overlapping request undid it legitimately; ids and claims given twice.
//! Each lost change names the request that dropped it, when the history shows one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use super::anomaly::{AnomalyKind, Witness};
use crate::history::{History, Operation, TaskView, secs};
use taskproof_core::graph::Graph;
use taskproof_core::protocol::Request;
use taskproof_core::task::{Change, Task, TaskId};

fn final_map(tasks: &[Task]) -> BTreeMap<TaskId, &Task> {
    tasks.iter().map(|t| (t.id, t)).collect()
}

fn acked_at(op: &Operation) -> Duration {
    op.completion.at()
}

/// Every answered request that carried a task, per task, in order of answer time (ties in
/// history order): where culprits are looked for. Built once per check, so that each
/// witness costs the requests answered after its change, not a scan of the whole history.
/// The index is built on the first culprit asked for: a clean history needs none.
struct Answers<'h> {
    history: &'h History,
    by_task: std::cell::OnceCell<BTreeMap<TaskId, Vec<&'h Operation>>>,
}

impl<'h> Answers<'h> {
    fn new(history: &'h History) -> Answers<'h> {
        Answers {
            history,
            by_task: std::cell::OnceCell::new(),
        }
    }

    fn by_task(&self) -> &BTreeMap<TaskId, Vec<&'h Operation>> {
        self.by_task.get_or_init(|| {
            let mut by_task: BTreeMap<TaskId, Vec<&'h Operation>> = BTreeMap::new();
            for o in self.history.ops.iter().filter(|o| o.answer().is_some()) {
                if let Some(t) = o.task_id() {
                    by_task.entry(t).or_default().push(o);
                }
            }
            for ops in by_task.values_mut() {
                ops.sort_by_key(|o| (o.completion.at(), o.index));
            }
            by_task
        })
    }

    /// The first answered request by another session on `task`, answered after `after`,
    /// whose answer fails `holds`: the write that dropped a change, or a read that missed
    /// it.
    fn culprit(
        &self,
        task: TaskId,
        not_session: u32,
        after: Duration,
        holds: impl Fn(&TaskView) -> bool,
    ) -> Option<&'h Operation> {
        let ops = self.by_task().get(&task)?;
        let from = ops.partition_point(|o| o.completion.at() <= after);
        ops[from..]
            .iter()
            .copied()
            .filter(|o| o.session != not_session)
            .find(|o| o.answer().is_some_and(|v| !holds(v)))
    }
}

fn culprit_text(c: Option<&Operation>, lost_at: Duration, what: &str) -> (String, Option<usize>) {
    match c {
        Some(c) => {
            let verb = match c.request {
                Request::Get { .. } => "read",
                _ => "wrote",
            };
            let how = if c.invoke < lost_at {
                format!(
                    "; it was sent at {}, before the change was acknowledged, so it worked from a copy read before the change",
                    secs(c.invoke)
                )
            } else {
                format!(
                    "; it was sent at {}, after the change was acknowledged",
                    secs(c.invoke)
                )
            };
            (
                format!(
                    "; {} {verb} task {} {what} (answered at {}){how}",
                    c.who(),
                    c.task_id().map(|t| t.to_string()).unwrap_or_default(),
                    secs(c.completion.at()),
                ),
                Some(c.index),
            )
        }
        None => (
            "; no answered request shows who dropped it (an unanswered request, or a writer whose answer is not what it wrote)".into(),
            None,
        ),
    }
}

/// A witness of `op`'s change of `task` lost at `at`, told by `text`; `other` is the
/// history index of a second operation the text names.
fn lost(op: &Operation, task: TaskId, text: String, other: Option<usize>, at: Duration) -> Witness {
    let mut ops = vec![op.index];
    ops.extend(other);
    let mut w = Witness::new(AnomalyKind::Lost, Some(task), text, ops);
    w.at = Some(at);
    w
}

/// [`lost`] for a change the request `c` dropped (when one was found): `text`, then who
/// dropped it ([`culprit_text`]); lost when `c` was answered, or else at the acknowledgement.
fn dropped(
    op: &Operation,
    task: TaskId,
    text: String,
    c: Option<&Operation>,
    what: &str,
) -> Witness {
    let ack = acked_at(op);
    let (why, cidx) = culprit_text(c, ack, what);
    let at = c.map(|c| c.completion.at()).unwrap_or(ack);
    lost(op, task, format!("{text}{why}"), cidx, at)
}

/// Acknowledged requests, grouped by the task `pick` names for each (requests it names
/// none for are left out), in history order.
fn acked_by_task(
    history: &History,
    pick: impl Fn(&Operation) -> Option<TaskId>,
) -> BTreeMap<TaskId, Vec<&Operation>> {
    let mut by_task: BTreeMap<TaskId, Vec<&Operation>> = BTreeMap::new();
    for op in history.ops.iter().filter(|o| o.is_ok()) {
        if let Some(id) = pick(op) {
            by_task.entry(id).or_default().push(op);
        }
    }
    by_task
}

/// A witness of task `id` given twice: to `first` and again to `dup`.
fn twice(
    kind: AnomalyKind,
    id: TaskId,
    first: &Operation,
    dup: &Operation,
    text: String,
) -> Witness {
    Witness::new(kind, Some(id), text, vec![first.index, dup.index])
}

/// Tasks a delete may have removed (acknowledged or unanswered): what was on them is gone
/// legitimately, so their values and owners are not judged here; the linearizability check
/// judges a deleted task that comes back.
pub(super) fn deleted_tasks(history: &History) -> BTreeSet<TaskId> {
    history
        .ops
        .iter()
        .filter(|o| o.is_ok() || o.is_info())
        .filter_map(|o| match o.request {
            Request::Delete { id, .. } => Some(id),
            _ => None,
        })
        .collect()
}

/// Keys that some request removes again (set to null, or the whole metadata removed): a
/// change to them may be legitimately undone, so they are not judged.
fn removed_keys(history: &History) -> (BTreeSet<(TaskId, String)>, BTreeSet<TaskId>) {
    let (mut keys, mut tasks) = (BTreeSet::new(), BTreeSet::new());
    for op in &history.ops {
        if let Request::Update { id, patch, .. } = &op.request {
            match &patch.metadata {
                Change::Remove => {
                    tasks.insert(*id);
                }
                Change::Set(m) => {
                    for (k, v) in m {
                        if v.is_null() {
                            keys.insert((*id, k.clone()));
                        }
                    }
                }
                Change::Keep => {}
            }
        }
    }
    (keys, tasks)
}

/// Every metadata value set by an acknowledged request must be on its task at the end,
/// unless a later request (acknowledged or unanswered) set the same key again: the value is
/// then overwritten, not lost. One witness per lost value.
pub fn lost_metadata(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let fin = final_map(final_tasks);
    let (removed, mut cleared) = removed_keys(history);
    cleared.extend(deleted_tasks(history));
    let keys = &history.keys;
    // (task, key number) -> the two writes of it that end last: (end, history index);
    // unanswered ones never end. A write is overwritten when another write of its key may
    // have come after it, that is, when some other write ends after it was invoked, and
    // the latest end among the others is one of these two.
    type Last = [Option<(Duration, usize)>; 2];
    let mut writes: HashMap<(TaskId, usize), Last, foldhash::fast::FixedState> = HashMap::default();
    for op in history.ops.iter().filter(|o| o.is_ok() || o.is_info()) {
        let Some(task) = op.task_id() else { continue };
        let end = if op.is_info() {
            Duration::MAX
        } else {
            op.completion.at()
        };
        for p in history.pairs(op) {
            let last = writes.entry((task, keys.key_number(p))).or_default();
            let w = Some((end, op.index));
            if w > last[0] {
                *last = [w, last[0]];
            } else if w > last[1] {
                last[1] = w;
            }
        }
    }
    let answers = Answers::new(history);
    let views: BTreeMap<TaskId, TaskView> = fin
        .iter()
        .map(|(id, t)| (*id, TaskView::new(t, keys)))
        .collect();
    let mut out = Vec::new();
    for op in history.ops.iter().filter(|o| o.is_ok()) {
        let Some(task) = op.task_id() else { continue };
        if cleared.contains(&task) {
            continue;
        }
        let view = views.get(&task);
        for p in history.pairs(op) {
            let key = keys.key(p);
            if !removed.is_empty() && removed.contains(&(task, key.to_string())) {
                continue;
            }
            if view.is_some_and(|v| v.metadata.contains(p)) {
                continue;
            }
            // Another write of the key that may have come after this one.
            let overwritten = writes[&(task, keys.key_number(p))]
                .iter()
                .flatten()
                .find(|&&(_, i)| i != op.index)
                .is_some_and(|&(end, _)| end > op.invoke);
            if overwritten {
                continue;
            }
            let state = match fin.get(&task) {
                None => format!("the final listing lacks task {task}"),
                Some(t) => match t.metadata.as_ref().and_then(|m| m.get(key)) {
                    Some(v) => format!("the final task has {key}={v}"),
                    None => format!("the final task lacks {key}"),
                },
            };
            let ack = acked_at(op);
            let c = answers.culprit(task, op.session, ack, |v| v.metadata.contains(p));
            let text = format!(
                "{} set metadata {} on task {task} (acknowledged at {}), the last write of that key; {state}",
                op.who(),
                keys.show(p),
                secs(ack)
            );
            out.push(dropped(
                op,
                task,
                text,
                c,
                &format!("without {}", keys.show(p)),
            ));
        }
    }
    out
}

/// A field a patch sets, with the value as text.
pub(super) fn field_writes(request: &Request) -> Vec<(&'static str, Option<String>)> {
    let Request::Update { patch, .. } = request else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(s) = &patch.subject {
        out.push(("subject", Some(s.clone())));
    }
    if let Some(s) = &patch.status {
        out.push(("status", Some(s.as_str().to_string())));
    }
    let ch = |c: &Change<String>| match c {
        Change::Keep => None,
        Change::Set(v) => Some(Some(v.clone())),
        Change::Remove => Some(None),
    };
    if let Some(v) = ch(&patch.owner) {
        out.push(("owner", v));
    }
    if let Some(v) = ch(&patch.active_form) {
        out.push(("activeForm", v));
    }
    out
}

fn field_value(t: &Task, field: &str) -> Option<String> {
    match field {
        "subject" => Some(t.subject.clone()),
        "status" => Some(t.status.as_str().to_string()),
        "owner" => t.owner.clone(),
        _ => t.active_form.clone(),
    }
}

pub(super) fn show(v: &Option<String>) -> String {
    match v {
        Some(s) => format!("{s:?}"),
        None => "unset".into(),
    }
}

/// Each field's final value must come from a write that no acknowledged write of the same
/// field followed in real time; otherwise the latest acknowledged write of it was lost.
/// Fields changed by claims are judged by [`claims`], not here.
pub fn lost_fields(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let fin = final_map(final_tasks);
    let claimed: BTreeSet<TaskId> = history
        .ops
        .iter()
        .filter(|o| matches!(o.request, Request::Claim { .. }))
        .filter_map(|o| o.task_id())
        .collect();
    // (task, field) -> [(op, value)] over acknowledged and unanswered writes.
    type Writes<'h> = Vec<(&'h Operation, Option<String>)>;
    let mut writes: BTreeMap<(TaskId, &str), Writes<'_>> = BTreeMap::new();
    for op in history.ops.iter().filter(|o| o.is_ok() || o.is_info()) {
        let Some(task) = op.task_id() else { continue };
        for (field, v) in field_writes(&op.request) {
            writes.entry((task, field)).or_default().push((op, v));
        }
    }
    let end = |o: &Operation| {
        if o.is_info() {
            Duration::MAX
        } else {
            o.completion.at()
        }
    };
    let answers = Answers::new(history);
    let mut out = Vec::new();
    for ((task, field), ws) in writes {
        if field != "subject" && claimed.contains(&task) {
            continue;
        }
        let Some(t) = fin.get(&task) else { continue };
        let actual = field_value(t, field);
        let acked: Vec<&(&Operation, Option<String>)> =
            ws.iter().filter(|(o, _)| o.is_ok()).collect();
        let Some(latest) = acked.iter().max_by_key(|(o, _)| o.completion.at()) else {
            continue;
        };
        // A write may explain the final value when no acknowledged write began after it
        // ended.
        let last_invoke = acked
            .iter()
            .map(|(z, _)| z.invoke)
            .max()
            .unwrap_or_default();
        let explains = ws
            .iter()
            .any(|(o, v)| *v == actual && end(o) >= last_invoke);
        if explains {
            continue;
        }
        let (op, v) = latest;
        let ack = op.completion.at();
        let c = answers.culprit(task, op.session, ack, |view| {
            let seen = match field {
                "subject" => Some(view.subject.clone()),
                "status" => Some(view.status.as_str().to_string()),
                "owner" => view.owner.clone(),
                _ => view.active_form.clone(),
            };
            seen == *v
        });
        let text = format!(
            "{} set {field} of task {task} to {} (acknowledged at {}), the latest acknowledged change of that field; the final task has {}",
            op.who(),
            show(v),
            secs(ack),
            show(&actual)
        );
        let what = format!("with {field} {}", show(&actual));
        out.push(dropped(op, task, text, c, &what));
    }
    out
}

/// Every acknowledged create must leave its task, with its subject, unless a later request
/// changed the subject or deleted it.
pub fn lost_creates(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let fin = final_map(final_tasks);
    let touched: BTreeSet<TaskId> = history
        .ops
        .iter()
        .filter(|o| match &o.request {
            Request::Update { patch, .. } => patch.subject.is_some(),
            Request::Delete { .. } => true,
            _ => false,
        })
        .filter_map(|o| o.task_id())
        .collect();
    // Creates by the id they were answered with, in history order.
    let mut creates: BTreeMap<TaskId, Vec<&Operation>> = BTreeMap::new();
    for o in &history.ops {
        if let (Request::Create { .. }, Some(id)) = (&o.request, o.task_id()) {
            creates.entry(id).or_default().push(o);
        }
    }
    let mut out = Vec::new();
    for op in history.ops.iter().filter(|o| o.is_ok()) {
        let Request::Create { task: new, .. } = &op.request else {
            continue;
        };
        let Some(id) = op.task_id() else { continue };
        if touched.contains(&id) {
            continue;
        }
        let found = match fin.get(&id) {
            Some(t) if t.subject == new.subject => continue,
            Some(t) => format!("the final task {id} has subject {:?}", t.subject),
            None => format!("the final listing has no task {id}"),
        };
        let ack = acked_at(op);
        // Who else was given this id, or wrote the subject found there.
        let other = creates
            .get(&id)
            .into_iter()
            .flatten()
            .copied()
            .filter(|o| o.session != op.session)
            .min_by_key(|o| o.completion.at());
        let (why, cidx) = match other {
            Some(c) => (
                format!(
                    "; {} was given the same id (create sent at {}, answered at {})",
                    c.who(),
                    secs(c.invoke),
                    secs(c.completion.at())
                ),
                Some(c.index),
            ),
            None => (String::new(), None),
        };
        let text = format!(
            "{} created task {id} with subject {:?} (acknowledged at {}); {found}{why}",
            op.who(),
            new.subject,
            secs(ack)
        );
        let at = other.map(|c| c.completion.at()).unwrap_or(ack).max(ack);
        out.push(lost(op, id, text, cidx, at));
    }
    out
}

/// Ids given to more than one acknowledged create, and ids the final listing holds twice.
pub fn duplicate_ids(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let by_id = acked_by_task(history, |op| match op.request {
        Request::Create { .. } => op.task_id(),
        _ => None,
    });
    let mut out = Vec::new();
    for (id, ops) in by_id.into_iter().filter(|(_, v)| v.len() > 1) {
        let first = ops[0];
        for dup in &ops[1..] {
            let text = format!(
                "{} and {} were both given id {id} (creates answered at {} and {})",
                first.who(),
                dup.who(),
                secs(first.completion.at()),
                secs(dup.completion.at())
            );
            out.push(twice(AnomalyKind::DuplicateIds, id, first, dup, text));
        }
    }
    for id in Graph::new(final_tasks).duplicate_ids() {
        out.push(Witness::new(
            AnomalyKind::DuplicateIds,
            Some(*id),
            format!("the final listing holds task {id} more than once"),
            Vec::new(),
        ));
    }
    out
}

/// At most one acknowledged claim per task (S20), and its owner is the final owner (unless
/// a delete may have removed the task since).
pub fn claims(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let fin = final_map(final_tasks);
    let deleted = deleted_tasks(history);
    let by_task = acked_by_task(history, |op| match op.request {
        Request::Claim { id, .. } => Some(id),
        _ => None,
    });
    let owner_of = |o: &Operation| match &o.request {
        Request::Claim { owner, .. } => owner.clone(),
        _ => unreachable!("claims only"),
    };
    let mut out = Vec::new();
    for (id, mut ops) in by_task {
        ops.sort_by_key(|o| o.completion.at());
        let first = ops[0];
        for dup in &ops[1..] {
            let text = format!(
                "task {id} was claimed by {} as {:?} (answered at {}) and again by {} as {:?} (sent at {}, answered at {})",
                first.who(),
                owner_of(first),
                secs(first.completion.at()),
                dup.who(),
                owner_of(dup),
                secs(dup.invoke),
                secs(dup.completion.at())
            );
            out.push(twice(AnomalyKind::DoubleClaims, id, first, dup, text));
        }
        if ops.len() == 1 && !deleted.contains(&id) {
            let owner = owner_of(first);
            let actual = fin.get(&id).and_then(|t| t.owner.clone());
            if actual.as_deref() != Some(owner.as_str()) {
                let text = format!(
                    "{} claimed task {id} as {owner:?} (acknowledged at {}); the final task has owner {}",
                    first.who(),
                    secs(first.completion.at()),
                    show(&actual)
                );
                out.push(lost(first, id, text, None, first.completion.at()));
            }
        }
    }
    out
}

/// The edges a request adds (`true`) or removes (`false`), as (blocker, blocked).
pub(super) fn edge_changes(request: &Request) -> Vec<((TaskId, TaskId), bool)> {
    let Request::Update { id, patch, .. } = request else {
        return Vec::new();
    };
    let mut out = Vec::new();
    out.extend(patch.add_blocked_by.iter().map(|&x| ((x, *id), true)));
    out.extend(patch.add_blocks.iter().map(|&x| ((*id, x), true)));
    out.extend(patch.remove_blocked_by.iter().map(|&x| ((x, *id), false)));
    out.extend(patch.remove_blocks.iter().map(|&x| ((*id, x), false)));
    out
}

/// For each edge changed by acknowledged requests: the final state must agree with the last
/// acknowledged change, unless another change of it overlaps that one or comes after it.
/// An edge counts as present when either side records it (half edges are counted apart).
pub fn lost_edges(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let fin = final_map(final_tasks);
    let mut changes: BTreeMap<(TaskId, TaskId), Vec<(&Operation, bool)>> = BTreeMap::new();
    for op in history.ops.iter().filter(|o| o.is_ok() || o.is_info()) {
        for (e, add) in edge_changes(&op.request) {
            changes.entry(e).or_default().push((op, add));
        }
    }
    let mut out = Vec::new();
    for ((a, b), cs) in changes {
        let Some(&(last, add)) = cs
            .iter()
            .filter(|(o, _)| o.is_ok())
            .max_by_key(|(o, _)| o.completion.at())
        else {
            continue;
        };
        let ack = last.completion.at();
        let settled = cs
            .iter()
            .all(|(o, _)| o.index == last.index || (o.is_ok() && o.completion.at() < last.invoke));
        if !settled {
            continue;
        }
        let present = fin.get(&a).is_some_and(|t| t.blocks.contains(&b))
            || fin.get(&b).is_some_and(|t| t.blocked_by.contains(&a));
        if present == add || !fin.contains_key(&a) || !fin.contains_key(&b) {
            continue;
        }
        let text = format!(
            "{} {} the edge {a} blocks {b} (acknowledged at {}), the last change of it; the final state {}",
            last.who(),
            if add { "added" } else { "removed" },
            secs(ack),
            if present { "still has it" } else { "lacks it" }
        );
        out.push(lost(last, b, text, None, ack));
    }
    out
}
