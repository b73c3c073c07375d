//! The history of a race run: every request as an invoke with its completion (`ok`, `fail`,
//! or `info` when no answer came because the session was killed or timed out), with times
//! since the start of the run and the session that sent it.
//!
//! Answers are kept in a compact form ([`TaskView`]): the metadata workloads make a task
//! grow to thousands of keys, and every `update` answer carries the whole task, so keeping
//! each answer as a [`Task`] would cost quadratic memory. Instead every metadata key a
//! request sets is interned once ([`KeyTable`]), and an answer keeps one bit per interned key
//! that it holds *with the value that was written*; a key nobody wrote, or a value nobody
//! wrote, marks the view `foreign`. The checker never needs more than that, since every
//! workload writes each key once with a value of its own.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::Value;

use crate::protocol::{ErrorKind, Request};
use crate::task::{Change, Status, Task, TaskId};

/// A set of interned metadata keys, one bit each. Trailing zero words are trimmed, so two
/// equal sets are equal as values whatever order they were built in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Bits(Vec<u64>);

impl Bits {
    pub fn insert(&mut self, i: usize) {
        let (w, b) = (i / 64, i % 64);
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << b;
    }

    pub fn remove(&mut self, i: usize) {
        let (w, b) = (i / 64, i % 64);
        if let Some(word) = self.0.get_mut(w) {
            *word &= !(1 << b);
        }
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    pub fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The members, smallest first.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            (0..64)
                .filter(move |b| word & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

/// The metadata keys requests set, each with the value it was set to.
#[derive(Debug, Clone, Default)]
pub struct KeyTable {
    index: HashMap<String, usize>,
    keys: Vec<(String, Value)>,
}

impl KeyTable {
    /// The key's number; the first value interned for a key is the one views compare with.
    pub fn intern(&mut self, key: &str, value: &Value) -> usize {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let i = self.keys.len();
        self.index.insert(key.to_string(), i);
        self.keys.push((key.to_string(), value.clone()));
        i
    }

    pub fn get(&self, key: &str) -> Option<usize> {
        self.index.get(key).copied()
    }

    pub fn key(&self, i: usize) -> &str {
        &self.keys[i].0
    }

    pub fn value(&self, i: usize) -> &Value {
        &self.keys[i].1
    }

    /// The interned keys `metadata` holds with their interned value, and whether it holds
    /// anything else (a key nobody set, or a value nobody wrote).
    pub fn view(&self, metadata: Option<&serde_json::Map<String, Value>>) -> (Bits, bool) {
        let mut bits = Bits::default();
        let mut foreign = false;
        for (k, v) in metadata.into_iter().flatten() {
            match self.index.get(k.as_str()) {
                Some(&i) if &self.keys[i].1 == v => bits.insert(i),
                _ => foreign = true,
            }
        }
        (bits, foreign)
    }
}

/// What the checker knows of one task in an answer: every field a workload changes.
/// `description` and unknown top-level fields are not kept; no workload changes them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskView {
    pub id: TaskId,
    pub subject: String,
    pub status: Status,
    pub owner: Option<String>,
    pub active_form: Option<String>,
    pub blocks: BTreeSet<TaskId>,
    pub blocked_by: BTreeSet<TaskId>,
    pub metadata: Bits,
    /// The metadata held a key or value no request wrote.
    pub foreign: bool,
}

impl TaskView {
    pub fn new(task: &Task, keys: &KeyTable) -> TaskView {
        let (metadata, foreign) = keys.view(task.metadata.as_ref());
        TaskView {
            id: task.id,
            subject: task.subject.clone(),
            status: task.status.clone(),
            owner: task.owner.clone(),
            active_form: task.active_form.clone(),
            blocks: task.blocks.clone(),
            blocked_by: task.blocked_by.clone(),
            metadata,
            foreign,
        }
    }
}

/// Which session sent a request. Sessions are numbered from 0 (the setup session) in the
/// order they were opened; a writer's replacement after a kill is a new session.
pub type SessionId = u32;

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Completion {
    /// Acknowledged. `task` is the task the answer carried (create, update, claim, get).
    Ok {
        at: Duration,
        task: Option<TaskView>,
    },
    /// Refused: the store says it changed nothing.
    Fail {
        at: Duration,
        kind: ErrorKind,
        message: String,
    },
    /// No answer: the session was killed or timed out. The request may or may not have
    /// taken effect.
    Info { at: Duration, reason: String },
}

impl Completion {
    pub fn at(&self) -> Duration {
        match self {
            Completion::Ok { at, .. }
            | Completion::Fail { at, .. }
            | Completion::Info { at, .. } => *at,
        }
    }
}

/// One request and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// Position in the history (invoke order within a session, sessions interleaved).
    pub index: usize,
    pub session: SessionId,
    /// The writer thread the session belongs to; `None` for the setup session.
    pub writer: Option<u32>,
    pub request: Request,
    pub invoke: Duration,
    pub completion: Completion,
}

impl Operation {
    pub fn is_ok(&self) -> bool {
        matches!(self.completion, Completion::Ok { .. })
    }

    pub fn is_info(&self) -> bool {
        matches!(self.completion, Completion::Info { .. })
    }

    /// The task the answer carried, if acknowledged with one.
    pub fn answer(&self) -> Option<&TaskView> {
        match &self.completion {
            Completion::Ok { task, .. } => task.as_ref(),
            _ => None,
        }
    }

    /// The task id the request addresses (for a create: the id it was answered with).
    pub fn task_id(&self) -> Option<TaskId> {
        match &self.request {
            Request::Get { id, .. }
            | Request::Update { id, .. }
            | Request::Delete { id, .. }
            | Request::Claim { id, .. } => Some(*id),
            Request::Create { .. } => self.answer().map(|t| t.id),
            Request::Hello | Request::List { .. } => None,
        }
    }

    /// The metadata keys (interned) the request sets.
    pub fn metadata_keys<'a>(&'a self, keys: &'a KeyTable) -> impl Iterator<Item = usize> + 'a {
        let map = match &self.request {
            Request::Update { patch, .. } => match &patch.metadata {
                Change::Set(m) => Some(m),
                _ => None,
            },
            Request::Create { task, .. } => task.metadata.as_ref(),
            _ => None,
        };
        map.into_iter()
            .flatten()
            .filter(|(_, v)| !v.is_null())
            .filter_map(|(k, _)| keys.get(k))
    }

    /// A short description for witnesses: "session 3 (writer 2)".
    pub fn who(&self) -> String {
        match self.writer {
            Some(w) => format!("session {} (writer {w})", self.session),
            None => format!("session {} (setup)", self.session),
        }
    }
}

/// Seconds with millisecond precision, as witnesses print times.
pub fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// A whole run's history, and the table its metadata keys are interned in.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub ops: Vec<Operation>,
    pub keys: KeyTable,
}

impl History {
    /// Interns the metadata keys of a request about to be sent. Call before
    /// [`History::push`] for the request, and before any answer that may hold its keys is
    /// turned into a view.
    pub fn intern_request(&mut self, request: &Request) {
        let map = match request {
            Request::Update { patch, .. } => match &patch.metadata {
                Change::Set(m) => Some(m),
                _ => None,
            },
            Request::Create { task, .. } => task.metadata.as_ref(),
            _ => None,
        };
        for (k, v) in map.into_iter().flatten() {
            if !v.is_null() {
                self.keys.intern(k, v);
            }
        }
    }

    /// Appends an operation, numbering it.
    pub fn push(&mut self, mut op: Operation) {
        op.index = self.ops.len();
        self.ops.push(op);
    }

    /// Number of requests by completion: (acknowledged, failed, unknown).
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for op in &self.ops {
            match op.completion {
                Completion::Ok { .. } => c.0 += 1,
                Completion::Fail { .. } => c.1 += 1,
                Completion::Info { .. } => c.2 += 1,
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bits_compare_as_sets() {
        let mut a = Bits::default();
        a.insert(3);
        a.insert(130);
        let mut b = Bits::default();
        b.insert(130);
        b.insert(3);
        b.insert(200);
        b.remove(200);
        assert_eq!(a, b);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![3, 130]);
        assert_eq!(a.len(), 2);
        assert!(a.contains(130) && !a.contains(4));
    }

    #[test]
    fn views_keep_only_written_values() {
        let mut keys = KeyTable::default();
        let k = keys.intern("w1_0", &json!(0));
        let mut t = Task::new(TaskId(1), "a");
        t.metadata = Some(json!({"w1_0": 0}).as_object().unwrap().clone());
        let v = TaskView::new(&t, &keys);
        assert!(v.metadata.contains(k) && !v.foreign);
        t.metadata = Some(json!({"w1_0": 5}).as_object().unwrap().clone());
        let v = TaskView::new(&t, &keys);
        assert!(!v.metadata.contains(k) && v.foreign);
    }
}
