//! The sequential model of one task, and the partition of a history into one sub-history per
//! task, for the linearizability check ([`super::linear`]).
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

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use std::collections::{HashMap, HashSet};

use super::history::{Completion, History, KeyTable, PairSet, TaskView};
use super::linear::{Entry, Model};
use crate::protocol::{ErrorKind, Request};
use crate::task::{Change, Status, Task, TaskId};

/// The model's state of one task. `exists: false` is a task that was never created.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskState {
    pub exists: bool,
    pub subject: String,
    pub status: Status,
    pub owner: Option<String>,
    pub active_form: Option<String>,
    pub blocks: BTreeSet<TaskId>,
    pub blocked_by: BTreeSet<TaskId>,
    pub metadata: PairSet,
}

impl TaskState {
    fn absent() -> TaskState {
        TaskState {
            exists: false,
            subject: String::new(),
            status: Status::Pending,
            owner: None,
            active_form: None,
            blocks: BTreeSet::new(),
            blocked_by: BTreeSet::new(),
            metadata: PairSet::default(),
        }
    }

    fn matches(&self, v: &TaskView) -> bool {
        self.exists
            && !v.foreign
            && self.subject == v.subject
            && self.status == v.status
            && self.owner == v.owner
            && self.active_form == v.active_form
            && self.blocks == v.blocks
            && self.blocked_by == v.blocked_by
            && self.metadata == v.metadata
    }

    /// A task that lists another both as blocker and as blocked, or itself, is on a cycle:
    /// the strict model never reaches such a state (S7).
    fn on_local_cycle(&self, me: TaskId) -> bool {
        self.blocks.contains(&me)
            || self.blocked_by.contains(&me)
            || self.blocks.intersection(&self.blocked_by).next().is_some()
    }

    fn describe(&self, keys: &KeyTable) -> String {
        if !self.exists {
            return "absent".into();
        }
        let mut s = format!("status {}", self.status);
        if let Some(o) = &self.owner {
            s += &format!(", owner {o:?}");
        }
        s += &format!(", subject {:?}", self.subject);
        if let Some(a) = &self.active_form {
            s += &format!(", activeForm {a:?}");
        }
        if !self.blocked_by.is_empty() {
            s += &format!(", blockedBy {}", ids(&self.blocked_by));
        }
        if !self.blocks.is_empty() {
            s += &format!(", blocks {}", ids(&self.blocks));
        }
        s += &format!(", {} metadata keys", self.metadata.len());
        let _ = keys;
        s
    }
}

fn ids(set: &BTreeSet<TaskId>) -> String {
    let v: Vec<String> = set.iter().map(|i| i.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// What one operation does to one task.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Create {
        subject: String,
        owner: Option<String>,
        active_form: Option<String>,
        blocks: BTreeSet<TaskId>,
        blocked_by: BTreeSet<TaskId>,
        metadata: Vec<usize>,
    },
    Update {
        subject: Option<String>,
        status: Option<Status>,
        owner: Change<String>,
        active_form: Change<String>,
        metadata_set: Vec<usize>,
        metadata_clear: bool,
        add_blocks: Vec<TaskId>,
        add_blocked_by: Vec<TaskId>,
        remove_blocks: Vec<TaskId>,
        remove_blocked_by: Vec<TaskId>,
    },
    Claim {
        owner: String,
    },
    Read,
    /// The other side of an edge change addressed to another task (S8).
    Edge {
        add: bool,
        /// `true`: this task's `blocks` gains/loses `other`; `false`: its `blockedBy`.
        in_blocks: bool,
        other: TaskId,
    },
}

/// What the history says came of the operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect<'h> {
    /// Acknowledged; the answer showed this task (`None`: not observed on this task). The
    /// view is borrowed from the history: copying every answer would cost as much as the
    /// search itself.
    Ok(Option<Cow<'h, TaskView>>),
    /// The final listing did not hold the task.
    Absent,
    /// Refused with this kind; nothing changed.
    Fail(ErrorKind),
    /// No answer: may have happened, or not.
    Unknown,
}

/// One operation on one task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOp<'h> {
    /// Index in the history; `None` for the final listing.
    pub history_index: Option<usize>,
    pub action: Action,
    pub expect: Expect<'h>,
}

/// The model of one task.
pub struct TaskModel<'a> {
    pub id: TaskId,
    pub keys: &'a KeyTable,
}

impl TaskModel<'_> {
    /// Applies the action as the strict store would; `Err` carries the error it would give.
    fn apply(&self, s: &TaskState, a: &Action) -> Result<TaskState, ErrorKind> {
        let mut n = s.clone();
        match a {
            Action::Create {
                subject,
                owner,
                active_form,
                blocks,
                blocked_by,
                metadata,
            } => {
                if s.exists {
                    // Ids are assigned by the store: a create answered with the id of a
                    // task that exists is a duplicate id; nothing explains it.
                    return Err(ErrorKind::Invalid);
                }
                n = TaskState {
                    exists: true,
                    subject: subject.clone(),
                    status: Status::Pending,
                    owner: owner.clone(),
                    active_form: active_form.clone(),
                    blocks: blocks.clone(),
                    blocked_by: blocked_by.clone(),
                    metadata: PairSet::default(),
                };
                for &k in metadata {
                    n.metadata.insert(k);
                }
            }
            Action::Update {
                subject,
                status,
                owner,
                active_form,
                metadata_set,
                metadata_clear,
                add_blocks,
                add_blocked_by,
                remove_blocks,
                remove_blocked_by,
            } => {
                if !s.exists {
                    return Err(ErrorKind::NotFound);
                }
                if let Some(x) = subject {
                    n.subject = x.clone();
                }
                change(&mut n.owner, owner);
                change(&mut n.active_form, active_form);
                if *metadata_clear {
                    n.metadata = PairSet::default();
                }
                for &p in metadata_set {
                    // A key holds one value: setting it replaces whatever it held.
                    n.metadata.set(self.keys, p);
                }
                for x in remove_blocked_by {
                    n.blocked_by.remove(x);
                }
                for x in remove_blocks {
                    n.blocks.remove(x);
                }
                if let Some(st) = status {
                    if s.status == Status::Completed && *st != Status::Completed {
                        return Err(ErrorKind::Transition);
                    }
                    n.status = st.clone();
                }
                n.blocked_by.extend(add_blocked_by.iter().copied());
                n.blocks.extend(add_blocks.iter().copied());
                if n.on_local_cycle(self.id) {
                    return Err(ErrorKind::Cycle);
                }
            }
            Action::Claim { owner } => {
                if !s.exists {
                    return Err(ErrorKind::NotFound);
                }
                if s.owner.is_some() || s.status != Status::Pending {
                    return Err(ErrorKind::Conflict);
                }
                n.status = Status::InProgress;
                n.owner = Some(owner.clone());
            }
            Action::Read => {
                if !s.exists {
                    return Err(ErrorKind::NotFound);
                }
            }
            Action::Edge {
                add,
                in_blocks,
                other,
            } => {
                if !s.exists {
                    return Err(ErrorKind::NotFound);
                }
                let set = if *in_blocks {
                    &mut n.blocks
                } else {
                    &mut n.blocked_by
                };
                if *add {
                    set.insert(*other);
                } else {
                    set.remove(other);
                }
                if n.on_local_cycle(self.id) {
                    return Err(ErrorKind::Cycle);
                }
            }
        }
        Ok(n)
    }
}

fn change(slot: &mut Option<String>, c: &Change<String>) {
    match c {
        Change::Keep => {}
        Change::Remove => *slot = None,
        Change::Set(v) => *slot = Some(v.clone()),
    }
}

impl<'a> Model for TaskModel<'a> {
    type State = TaskState;
    type Op = TaskOp<'a>;

    fn init(&self) -> TaskState {
        TaskState::absent()
    }

    fn step(&self, s: &TaskState, op: &TaskOp<'a>) -> Option<TaskState> {
        let applied = self.apply(s, &op.action);
        match &op.expect {
            Expect::Ok(view) => {
                let n = applied.ok()?;
                match view {
                    Some(v) if !n.matches(v) => None,
                    _ => Some(n),
                }
            }
            Expect::Absent => (!s.exists).then(|| s.clone()),
            // A refusal must be the one the model gives; nothing changes.
            Expect::Fail(kind) => (applied.err() == Some(*kind)).then(|| s.clone()),
            // An unanswered operation that would be refused changes nothing either way, so
            // placing it is the same as never placing it.
            Expect::Unknown => applied.ok(),
        }
    }

    fn explain(&self, s: &TaskState, op: &TaskOp<'a>) -> String {
        let before = s.describe(self.keys);
        match (&op.expect, self.apply(s, &op.action)) {
            (Expect::Ok(_), Err(_)) if op.history_index.is_none() => {
                "the final listing holds it, but no request that could have created it fits".into()
            }
            (Expect::Ok(_), Err(k)) => {
                format!("it was acknowledged, but with the task {before} it had to fail ({k})")
            }
            (Expect::Ok(Some(v)), Ok(n)) => {
                let mut diffs = Vec::new();
                if n.subject != v.subject {
                    diffs.push(format!("subject {:?} for {:?}", v.subject, n.subject));
                }
                if n.status != v.status {
                    diffs.push(format!("status {} for {}", v.status, n.status));
                }
                if n.owner != v.owner {
                    diffs.push(format!("owner {:?} for {:?}", v.owner, n.owner));
                }
                if n.active_form != v.active_form {
                    diffs.push(format!(
                        "activeForm {:?} for {:?}",
                        v.active_form, n.active_form
                    ));
                }
                if n.blocks != v.blocks {
                    diffs.push(format!("blocks {} for {}", ids(&v.blocks), ids(&n.blocks)));
                }
                if n.blocked_by != v.blocked_by {
                    diffs.push(format!(
                        "blockedBy {} for {}",
                        ids(&v.blocked_by),
                        ids(&n.blocked_by)
                    ));
                }
                let missing: Vec<String> = n
                    .metadata
                    .iter()
                    .filter(|&k| !v.metadata.contains(k))
                    .map(|k| self.keys.show(k))
                    .take(3)
                    .collect();
                if !missing.is_empty() {
                    diffs.push(format!("metadata without {}", missing.join(", ")));
                }
                let extra: Vec<String> = v
                    .metadata
                    .iter()
                    .filter(|&k| !n.metadata.contains(k))
                    .map(|k| self.keys.show(k))
                    .take(3)
                    .collect();
                if !extra.is_empty() {
                    diffs.push(format!(
                        "metadata with {} not yet written",
                        extra.join(", ")
                    ));
                }
                if v.foreign {
                    diffs.push("metadata keys or values nobody wrote".into());
                }
                format!(
                    "after the operations that must precede it the task was {before}; the answer showed {}",
                    diffs.join("; ")
                )
            }
            (Expect::Absent, _) => format!("the final listing lacks it, but it was {before}"),
            (Expect::Fail(k), r) => format!(
                "it was refused ({k}), but the task was {before}, where it {}",
                match r {
                    Ok(_) => "succeeds".to_string(),
                    Err(e) => format!("fails with {e}"),
                }
            ),
            _ => format!("the task was {before}"),
        }
    }
}

/// Failure kinds the per-task model judges; every other one is left out of the partition.
fn judged(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::NotFound | ErrorKind::Conflict | ErrorKind::Transition
    )
}

/// Splits the history into one sub-history per task, adding the final listing as a read of
/// every task at `end` (after every answered operation).
pub fn partition<'h>(
    history: &'h History,
    final_tasks: &[Task],
    end: Duration,
) -> BTreeMap<TaskId, Vec<Entry<TaskOp<'h>>>> {
    let mut parts: BTreeMap<TaskId, Vec<Entry<TaskOp<'h>>>> = BTreeMap::new();
    let keys = &history.keys;
    for op in &history.ops {
        let (expect, complete) = match &op.completion {
            Completion::Ok { at, .. } => (Expect::Ok(op.answer().map(Cow::Borrowed)), Some(*at)),
            Completion::Fail { at, kind, .. } if judged(*kind) => (Expect::Fail(*kind), Some(*at)),
            Completion::Fail { .. } => continue,
            Completion::Info { at, .. } => (Expect::Unknown, history.info_bounded.then_some(*at)),
        };
        let optional = matches!(expect, Expect::Unknown);
        let mut push = |id: TaskId, action: Action, expect: Expect<'h>| {
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
                let metadata = history.pairs(op).collect();
                if effects {
                    for &b in &task.blocked_by {
                        push(b, edge(true, true, id), side(&expect));
                    }
                    for &b in &task.blocks {
                        push(b, edge(true, false, id), side(&expect));
                    }
                }
                push(
                    id,
                    Action::Create {
                        subject: task.subject.clone(),
                        owner: task.owner.clone(),
                        active_form: task.active_form.clone(),
                        blocks: task.blocks.iter().copied().collect(),
                        blocked_by: task.blocked_by.iter().copied().collect(),
                        metadata,
                    },
                    expect,
                );
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
                let (metadata_set, metadata_clear) = match &patch.metadata {
                    Change::Set(_) => (history.pairs(op).collect(), false),
                    Change::Remove => (Vec::new(), true),
                    Change::Keep => (Vec::new(), false),
                };
                push(
                    *id,
                    Action::Update {
                        subject: patch.subject.clone(),
                        status: patch.status.clone(),
                        owner: patch.owner.clone(),
                        active_form: patch.active_form.clone(),
                        metadata_set,
                        metadata_clear,
                        add_blocks: patch.add_blocks.clone(),
                        add_blocked_by: patch.add_blocked_by.clone(),
                        remove_blocks: patch.remove_blocks.clone(),
                        remove_blocked_by: patch.remove_blocked_by.clone(),
                    },
                    expect,
                );
            }
            Request::Claim { id, owner, .. } => push(
                *id,
                Action::Claim {
                    owner: owner.clone(),
                },
                expect,
            ),
            Request::Get { id, .. } => {
                if matches!(expect, Expect::Ok(_) | Expect::Fail(_)) {
                    push(*id, Action::Read, expect)
                }
            }
            // Workloads do not delete or list mid-run; hello reads nothing.
            Request::Delete { .. } | Request::List { .. } | Request::Hello => {}
        }
    }
    let listed: BTreeMap<TaskId, &Task> = final_tasks.iter().map(|t| (t.id, t)).collect();
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
                        subject: new.subject.clone(),
                        owner: new.owner.clone(),
                        active_form: new.active_form.clone(),
                        blocks: new.blocks.iter().copied().collect(),
                        blocked_by: new.blocked_by.iter().copied().collect(),
                        metadata: history.pairs(o).collect(),
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
            Some(t) => Expect::Ok(Some(Cow::Owned(TaskView::new(t, keys)))),
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
        prune_unobserved(entries);
    }
    parts
}

/// Drops unanswered updates whose effect no answer ever shows: each sets only metadata
/// values, subjects or activeForms (no other operation's outcome depends on those) that no
/// answered view of the task, the final listing included, holds. Such an operation never
/// helps explain the history, so leaving it out changes no verdict, and it spares the
/// search from trying it at every point (each one would double the configurations to try
/// when proving a history wrong).
fn prune_unobserved(entries: &mut Vec<Entry<TaskOp<'_>>>) {
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
        .copied();
    let mut pairs = vec![0u64; top.map_or(0, |t| t / 64 + 1)];
    let mut subjects = HashSet::new();
    let mut forms = HashSet::new();
    for e in entries.iter() {
        if let Expect::Ok(Some(v)) = &e.op.expect {
            if let Some(top) = top {
                for p in v.metadata.iter().take_while(|&p| p <= top) {
                    pairs[p / 64] |= 1 << (p % 64);
                }
            }
            if !subjects.contains(&v.subject) {
                subjects.insert(v.subject.clone());
            }
            if let Some(a) = &v.active_form
                && !forms.contains(a)
            {
                forms.insert(a.clone());
            }
        }
    }
    entries.retain(|e| {
        let Expect::Unknown = e.op.expect else {
            return true;
        };
        let Action::Update {
            subject,
            status: None,
            owner: Change::Keep,
            active_form,
            metadata_set,
            metadata_clear: false,
            add_blocks,
            add_blocked_by,
            remove_blocks,
            remove_blocked_by,
        } = &e.op.action
        else {
            return true;
        };
        let edges = !(add_blocks.is_empty()
            && add_blocked_by.is_empty()
            && remove_blocks.is_empty()
            && remove_blocked_by.is_empty());
        let seen = metadata_set
            .iter()
            .any(|&p| pairs.get(p / 64).is_some_and(|w| w & (1 << (p % 64)) != 0))
            || subject.as_ref().is_some_and(|x| subjects.contains(x))
            || match active_form {
                Change::Keep => false,
                Change::Set(a) => forms.contains(a),
                Change::Remove => true,
            };
        edges || seen
    });
}

fn edge(add: bool, in_blocks: bool, other: TaskId) -> Action {
    Action::Edge {
        add,
        in_blocks,
        other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(metadata_set: Vec<usize>, owner: Change<String>) -> Action {
        Action::Update {
            subject: None,
            status: None,
            owner,
            active_form: Change::Keep,
            metadata_set,
            metadata_clear: false,
            add_blocks: Vec::new(),
            add_blocked_by: Vec::new(),
            remove_blocks: Vec::new(),
            remove_blocked_by: Vec::new(),
        }
    }

    fn entry(action: Action, expect: Expect<'static>) -> Entry<TaskOp<'static>> {
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
            entry(update(vec![], Change::Set("x".into())), Expect::Unknown),
            entry(Action::Read, Expect::Ok(Some(Cow::Owned(view)))),
        ];
        prune_unobserved(&mut entries);
        let kept: Vec<&Action> = entries.iter().map(|e| &e.op.action).collect();
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[0], &update(vec![1], Change::Keep));
    }
}
