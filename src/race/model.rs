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
use std::hash::{Hash, Hasher};
use std::time::Duration;

use std::collections::{HashMap, HashSet};

use super::history::{Completion, History, KeyTable, TaskView};
use super::linear::{Entry, Model};
use crate::protocol::{ErrorKind, Request};
use crate::task::{Change, NewTask, Patch, Status, Task, TaskId};

/// The model's state of one task. `exists: false` is a task that was never created.
///
/// The strings are borrowed from the history's requests (every value the model can give a
/// field comes from one), so that a step, which builds a new state, copies no text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskState<'h> {
    pub exists: bool,
    pub subject: &'h str,
    pub status: Status,
    pub owner: Option<&'h str>,
    pub active_form: Option<&'h str>,
    pub blocks: BTreeSet<TaskId>,
    pub blocked_by: BTreeSet<TaskId>,
    pub metadata: Meta,
}

/// The metadata pairs a model state holds, with an index from each of the task's keys to
/// the pair it holds, in one allocation. The pairs are kept as a view's [`PairSet`] keeps
/// them (sorted numbers), so comparing the state with an answer compares two slices; the
/// index makes setting a key cost a lookup and two binary searches, where finding the old
/// value of the key in the sorted pairs cost a pass over all of them (and a lookup of each
/// one's key) at every step of the search.
#[derive(Debug, Clone)]
pub struct Meta {
    /// `buf[..slots]`: the pair each key of the task holds, [`Meta::NONE`] for none, at the
    /// key's slot ([`TaskModel::slot`]); `buf[slots..]`: the pairs held, smallest first.
    buf: Vec<u32>,
    slots: usize,
}

impl Meta {
    const NONE: u32 = u32::MAX;

    fn empty(slots: usize) -> Meta {
        Meta {
            buf: vec![Meta::NONE; slots],
            slots,
        }
    }

    fn clear(&mut self) {
        self.buf.truncate(self.slots);
        self.buf.fill(Meta::NONE);
    }

    /// Gives the key at `slot` the pair `p`, dropping the pair it held.
    fn set(&mut self, slot: usize, p: u32) {
        let old = std::mem::replace(&mut self.buf[slot], p);
        let pairs = self.slots;
        if old == p {
            return;
        }
        if old != Meta::NONE
            && let Ok(i) = self.buf[pairs..].binary_search(&old)
        {
            self.buf.remove(pairs + i);
        }
        if let Err(i) = self.buf[pairs..].binary_search(&p) {
            self.buf.insert(pairs + i, p);
        }
    }

    /// The pairs held, smallest first.
    pub fn pairs(&self) -> &[u32] {
        &self.buf[self.slots..]
    }

    pub fn len(&self) -> usize {
        self.buf.len() - self.slots
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, p: usize) -> bool {
        u32::try_from(p).is_ok_and(|p| self.pairs().binary_search(&p).is_ok())
    }

    /// The pairs held, smallest first.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.pairs().iter().map(|&p| p as usize)
    }
}

/// Two states' metadata are equal when they hold the same pairs: the index follows from
/// them.
impl PartialEq for Meta {
    fn eq(&self, other: &Meta) -> bool {
        self.pairs() == other.pairs()
    }
}

impl Eq for Meta {}

impl Hash for Meta {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.pairs().hash(h);
    }
}

impl<'h> TaskState<'h> {
    fn absent(slots: usize) -> TaskState<'h> {
        TaskState {
            exists: false,
            subject: "",
            status: Status::Pending,
            owner: None,
            active_form: None,
            blocks: BTreeSet::new(),
            blocked_by: BTreeSet::new(),
            metadata: Meta::empty(slots),
        }
    }

    fn matches(&self, v: &TaskView) -> bool {
        self.exists
            && !v.foreign
            && self.metadata.pairs() == v.metadata.as_slice()
            && self.subject == v.subject
            && self.status == v.status
            && self.owner == v.owner.as_deref()
            && self.active_form == v.active_form.as_deref()
            && self.blocks == v.blocks
            && self.blocked_by == v.blocked_by
    }

    /// A task that lists another both as blocker and as blocked, or itself, is on a cycle:
    /// the strict model never reaches such a state (S7).
    fn on_local_cycle(&self, me: TaskId) -> bool {
        self.blocks.contains(&me)
            || self.blocked_by.contains(&me)
            || self.blocks.intersection(&self.blocked_by).next().is_some()
    }

    fn describe(&self) -> String {
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
        s
    }
}

fn ids(set: &BTreeSet<TaskId>) -> String {
    let v: Vec<String> = set.iter().map(|i| i.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// What one operation does to one task. It borrows the history's request: the partition
/// builds one action per operation and copies nothing (an entry that held its own copy of
/// the patch was four times the size, and building a million of them cost more than
/// searching them).
#[derive(Debug, Clone, PartialEq)]
pub enum Action<'h> {
    Create {
        task: &'h NewTask,
        /// The interned metadata pairs it sets.
        metadata: Cow<'h, [u32]>,
    },
    Update {
        patch: &'h Patch,
        /// The interned metadata pairs it sets (null values are not pairs).
        metadata_set: Cow<'h, [u32]>,
    },
    Claim {
        owner: &'h str,
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
    /// view is borrowed from the history (or from the final listing's views): copying
    /// every answer would cost as much as the search itself.
    Ok(Option<&'h TaskView>),
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
    pub action: Action<'h>,
    pub expect: Expect<'h>,
}

/// A hasher for the key index: quality enough for interned numbers, and the same in every
/// run.
type FastHash = foldhash::fast::FixedState;

/// The model of one task.
pub struct TaskModel<'a> {
    pub id: TaskId,
    pub keys: &'a KeyTable,
    /// Key number -> its slot in a state's [`Meta`] index: every key the task's operations
    /// set, numbered from 0.
    slots: HashMap<u32, u32, FastHash>,
}

impl<'a> TaskModel<'a> {
    /// The model of task `id`, able to hold every metadata key `entries` set.
    pub fn new(id: TaskId, keys: &'a KeyTable, entries: &[Entry<TaskOp<'_>>]) -> TaskModel<'a> {
        let mut slots: HashMap<u32, u32, FastHash> = HashMap::default();
        for e in entries {
            let pairs = match &e.op.action {
                Action::Create { metadata, .. } => metadata,
                Action::Update { metadata_set, .. } => metadata_set,
                _ => continue,
            };
            for &p in pairs.iter() {
                let next = slots.len() as u32;
                slots
                    .entry(keys.key_number(p as usize) as u32)
                    .or_insert(next);
            }
        }
        TaskModel { id, keys, slots }
    }

    /// Gives pair `p`'s key the value `p` in `m`.
    fn set(&self, m: &mut Meta, p: u32) {
        let key = self.keys.key_number(p as usize) as u32;
        let slot = self.slots[&key];
        m.set(slot as usize, p);
    }

    /// Applies the action as the strict store would; `Err` carries the error it would give.
    fn apply<'h>(&self, s: &TaskState<'h>, a: &Action<'h>) -> Result<TaskState<'h>, ErrorKind> {
        // Refusals are found before the state is copied.
        match a {
            Action::Create { .. } if s.exists => {
                // Ids are assigned by the store: a create answered with the id of a task
                // that exists is a duplicate id; nothing explains it.
                return Err(ErrorKind::Invalid);
            }
            Action::Update { .. } | Action::Claim { .. } | Action::Read | Action::Edge { .. }
                if !s.exists =>
            {
                return Err(ErrorKind::NotFound);
            }
            Action::Update { patch, .. }
                if s.status == Status::Completed
                    && patch
                        .status
                        .as_ref()
                        .is_some_and(|st| *st != Status::Completed) =>
            {
                return Err(ErrorKind::Transition);
            }
            Action::Claim { .. } if s.owner.is_some() || s.status != Status::Pending => {
                return Err(ErrorKind::Conflict);
            }
            _ => {}
        }
        let mut n = s.clone();
        match a {
            Action::Create { task, metadata } => {
                n.exists = true;
                n.subject = &task.subject;
                n.status = Status::Pending;
                n.owner = task.owner.as_deref();
                n.active_form = task.active_form.as_deref();
                n.blocks = task.blocks.iter().copied().collect();
                n.blocked_by = task.blocked_by.iter().copied().collect();
                n.metadata.clear();
                for &p in metadata.iter() {
                    self.set(&mut n.metadata, p);
                }
            }
            Action::Update {
                patch,
                metadata_set,
            } => {
                if let Some(x) = &patch.subject {
                    n.subject = x;
                }
                change(&mut n.owner, &patch.owner);
                change(&mut n.active_form, &patch.active_form);
                if matches!(patch.metadata, Change::Remove) {
                    n.metadata.clear();
                }
                for &p in metadata_set.iter() {
                    // A key holds one value: setting it replaces whatever it held.
                    self.set(&mut n.metadata, p);
                }
                for x in &patch.remove_blocked_by {
                    n.blocked_by.remove(x);
                }
                for x in &patch.remove_blocks {
                    n.blocks.remove(x);
                }
                if let Some(st) = &patch.status {
                    n.status = st.clone();
                }
                n.blocked_by.extend(patch.add_blocked_by.iter().copied());
                n.blocks.extend(patch.add_blocks.iter().copied());
                if n.on_local_cycle(self.id) {
                    return Err(ErrorKind::Cycle);
                }
            }
            Action::Claim { owner } => {
                n.status = Status::InProgress;
                n.owner = Some(owner);
            }
            Action::Read => {}
            Action::Edge {
                add,
                in_blocks,
                other,
            } => {
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

fn change<'h>(slot: &mut Option<&'h str>, c: &'h Change<String>) {
    match c {
        Change::Keep => {}
        Change::Remove => *slot = None,
        Change::Set(v) => *slot = Some(v),
    }
}

/// `key=value` of the first three of `pairs`, for witnesses.
fn show_pairs(keys: &KeyTable, pairs: impl Iterator<Item = usize>) -> Vec<String> {
    pairs.take(3).map(|k| keys.show(k)).collect()
}

impl<'a> Model for TaskModel<'a> {
    type State = TaskState<'a>;
    type Op = TaskOp<'a>;

    fn init(&self) -> TaskState<'a> {
        TaskState::absent(self.slots.len())
    }

    fn step(&self, s: &TaskState<'a>, op: &TaskOp<'a>) -> Option<TaskState<'a>> {
        match &op.expect {
            Expect::Ok(view) => {
                let n = self.apply(s, &op.action).ok()?;
                match view {
                    Some(v) if !n.matches(v) => None,
                    _ => Some(n),
                }
            }
            Expect::Absent => (!s.exists).then(|| s.clone()),
            // A refusal must be the one the model gives; nothing changes.
            Expect::Fail(kind) => {
                (self.apply(s, &op.action).err() == Some(*kind)).then(|| s.clone())
            }
            // An unanswered operation that would be refused changes nothing either way, so
            // placing it is the same as never placing it.
            Expect::Unknown => self.apply(s, &op.action).ok(),
        }
    }

    fn explain(&self, s: &TaskState<'a>, op: &TaskOp<'a>) -> String {
        let before = s.describe();
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
                if n.owner != v.owner.as_deref() {
                    diffs.push(format!("owner {:?} for {:?}", v.owner, n.owner));
                }
                if n.active_form != v.active_form.as_deref() {
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
                let missing = show_pairs(
                    self.keys,
                    n.metadata.iter().filter(|&k| !v.metadata.contains(k)),
                );
                if !missing.is_empty() {
                    diffs.push(format!("metadata without {}", missing.join(", ")));
                }
                let extra = show_pairs(
                    self.keys,
                    v.metadata.iter().filter(|&k| !n.metadata.contains(k)),
                );
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
    for op in &history.ops {
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
            Request::Get { id, .. } => {
                if matches!(expect, Expect::Ok(_) | Expect::Fail(_)) {
                    push(*id, Action::Read, expect)
                }
            }
            // Workloads do not delete or list mid-run; hello reads nothing.
            Request::Delete { .. } | Request::List { .. } | Request::Hello => {}
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
    use crate::race::history::PairSet;

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
