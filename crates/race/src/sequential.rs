//! The sequential specification of one task, for the linearizability check ([`super::linear`]): the
//! task's state, what one operation does to it and what the history says came of it, and
//! the step that applies an operation. Histories are split into one sub-history per task by
//! [`super::partition`], whose docs state what that split can and cannot catch.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

use std::collections::HashMap;

use crate::history::{KeyTable, TaskView};
use crate::linear::{Entry, Sequential};
use taskproof_core::protocol::ErrorKind;
use taskproof_core::task::{Change, NewTask, Patch, Status, TaskId};

/// The model's state of one task. `exists: false` is a task that was never created, or
/// one that was deleted (`deleted: true`): the strict store never gives a deleted task's id
/// again, and nothing but a create brings a task into being, so a deleted task stays
/// absent, and every later update, claim or read of it is refused (`not_found`).
///
/// The strings are borrowed from the history's requests (every value the model can give a
/// field comes from one), so that a step, which builds a new state, copies no text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskState<'h> {
    pub exists: bool,
    pub deleted: bool,
    pub subject: &'h str,
    pub status: Status,
    pub owner: Option<&'h str>,
    pub active_form: Option<&'h str>,
    pub blocks: BTreeSet<TaskId>,
    pub blocked_by: BTreeSet<TaskId>,
    pub metadata: Meta,
}

/// The metadata pairs a model state holds, with an index from each of the task's keys to
/// the pair it holds, in one allocation. The pairs are kept as a view's [`PairSet`](crate::history::PairSet) keeps
/// them (sorted numbers), so comparing the state with an answer compares two slices; the
/// index makes setting a key cost a lookup and two binary searches, where finding the old
/// value of the key in the sorted pairs cost a pass over all of them (and a lookup of each
/// one's key) at every step of the search.
#[derive(Debug, Clone)]
pub struct Meta {
    /// `buf[..slots]`: the pair each key of the task holds, [`Meta::NONE`] for none, at the
    /// key's slot ([`SequentialTask::slot`]); `buf[slots..]`: the pairs held, smallest first.
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
            deleted: false,
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
        if self.deleted {
            return "deleted".into();
        }
        if !self.exists {
            return "absent".into();
        }
        let mut s = format!("status {}", self.status);
        if let Some(o) = &self.owner {
            s += &format!(", owner {}", text(Some(o)));
        }
        s += &format!(", subject {}", text(Some(self.subject)));
        if let Some(a) = &self.active_form {
            s += &format!(", activeForm {}", text(Some(a)));
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
    /// The task is removed; its id is never given again.
    Delete,
    Read,
    /// The other side of an edge change addressed to another task (S8).
    Edge {
        add: bool,
        /// `true`: this task's `blocks` gains/loses `other`; `false`: its `blockedBy`.
        in_blocks: bool,
        other: TaskId,
    },
    /// The other side of a delete of task `other` (S10): this task forgets its edges with
    /// `other`. A task that does not exist is left as it is (the store skips it).
    Unlink {
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
pub(super) type FastHash = foldhash::fast::FixedState;

/// The model of one task.
pub struct SequentialTask<'a> {
    pub id: TaskId,
    pub keys: &'a KeyTable,
    /// Key number -> its slot in a state's [`Meta`] index: every key the task's operations
    /// set, numbered from 0.
    slots: HashMap<u32, u32, FastHash>,
}

impl<'a> SequentialTask<'a> {
    /// The model of task `id`, able to hold every metadata key `entries` set.
    pub fn new(
        id: TaskId,
        keys: &'a KeyTable,
        entries: &[Entry<TaskOp<'_>>],
    ) -> SequentialTask<'a> {
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
        SequentialTask { id, keys, slots }
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
            Action::Create { .. } if s.exists || s.deleted => {
                // Ids are assigned by the store: a create answered with the id of a task
                // that exists, or of one deleted (ids are never given again), is a
                // duplicate id; nothing explains it.
                return Err(ErrorKind::Invalid);
            }
            Action::Update { .. }
            | Action::Claim { .. }
            | Action::Delete
            | Action::Read
            | Action::Edge { .. }
                if !s.exists =>
            {
                return Err(ErrorKind::NotFound);
            }
            Action::Unlink { .. } if !s.exists => return Ok(s.clone()),
            Action::Delete => {
                let mut gone = TaskState::absent(self.slots.len());
                gone.deleted = true;
                return Ok(gone);
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
            Action::Read | Action::Delete => {}
            Action::Unlink { other } => {
                n.blocks.remove(other);
                n.blocked_by.remove(other);
            }
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

impl<'a> Sequential for SequentialTask<'a> {
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
            (Expect::Ok(_), Err(_)) if op.history_index.is_none() && s.deleted => {
                "the final listing holds it, but it was deleted, and nothing brings a deleted task back".into()
            }
            (Expect::Ok(_), Err(_)) if op.history_index.is_none() => {
                "the final listing holds it, but no request that could have created it fits".into()
            }
            (Expect::Ok(_), Err(k)) => {
                format!("it was acknowledged, but with the task {before} it had to fail ({k})")
            }
            (Expect::Ok(Some(v)), Ok(n)) => {
                let mut diffs = Vec::new();
                if n.subject != v.subject {
                    diffs.push(format!(
                        "subject {} for {}",
                        text(Some(&v.subject)),
                        text(Some(n.subject))
                    ));
                }
                if n.status != v.status {
                    diffs.push(format!("status {} for {}", v.status, n.status));
                }
                if n.owner != v.owner.as_deref() {
                    diffs.push(format!(
                        "owner {} for {}",
                        text(v.owner.as_deref()),
                        text(n.owner)
                    ));
                }
                if n.active_form != v.active_form.as_deref() {
                    diffs.push(format!(
                        "activeForm {} for {}",
                        text(v.active_form.as_deref()),
                        text(n.active_form)
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

/// A text field as a witness shows it: quoted as JSON quotes it, or `unset`.
fn text(v: Option<&str>) -> String {
    match v {
        Some(t) => serde_json::Value::from(t).to_string(),
        None => "unset".into(),
    }
}
