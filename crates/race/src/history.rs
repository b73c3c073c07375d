//! The history of a race run: every request as an invoke with its completion (`ok`, `fail`,
//! or `info` when no answer came because the session was killed or timed out), with times
//! since the start of the run and the session that sent it.
//!
//! Answers are kept in a compact form ([`TaskView`]): the metadata workloads make a task
//! grow to thousands of keys, and every `update` answer carries the whole task, so keeping
//! each answer as a [`Task`] would cost quadratic memory. Instead every metadata (key,
//! value) pair a request sets is numbered once ([`KeyTable`]), and an answer keeps the
//! sorted numbers of the pairs it holds ([`PairSet`]); a key or value no request wrote marks
//! the view `foreign`. The checker never needs more than that: it only asks whether a
//! written value is there.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::Value;

use taskproof_core::protocol::{ErrorKind, Request};
use taskproof_core::task::{Change, Status, Task, TaskId};

/// A set of interned metadata pairs, kept as their sorted numbers. A task's metadata holds
/// one value per key, so a set is as small as the task's metadata, however long the history
/// is: a bit set indexed by pair number grew with every value ever written, and made every
/// answer, every model state and every step of the search cost time in the history's length.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PairSet(Vec<u32>);

impl PairSet {
    fn number(p: usize) -> u32 {
        u32::try_from(p).expect("fewer than 2^32 metadata pairs in one history")
    }

    pub fn insert(&mut self, p: usize) {
        let p = Self::number(p);
        if let Err(i) = self.0.binary_search(&p) {
            self.0.insert(i, p);
        }
    }

    pub fn remove(&mut self, p: usize) {
        if let Ok(i) = self.0.binary_search(&Self::number(p)) {
            self.0.remove(i);
        }
    }

    pub fn contains(&self, p: usize) -> bool {
        self.0.binary_search(&Self::number(p)).is_ok()
    }

    /// Sets the key of pair `p` to `p`'s value: any other value of that key leaves the set.
    /// Costs the size of the set, not the number of values the key ever had.
    pub fn set(&mut self, keys: &KeyTable, p: usize) {
        let key = keys.key_of[p];
        self.0.retain(|&q| keys.key_of[q as usize] != key);
        self.insert(p);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The members' numbers, smallest first.
    pub fn as_slice(&self) -> &[u32] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The members, smallest first.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().map(|&p| p as usize)
    }
}

/// The metadata (key, value) pairs requests set, each numbered once.
#[derive(Debug, Clone, Default)]
pub struct KeyTable {
    keys: Vec<String>,
    key_index: HashMap<String, usize>,
    /// pair -> (key number, value)
    pairs: Vec<(usize, Value)>,
    /// (key number, value as JSON text) -> pair
    pair_index: HashMap<(usize, String), usize>,
    /// key number -> its pairs
    pairs_of: Vec<Vec<usize>>,
    /// pair -> its key number, densely: [`PairSet::set`] asks it for every pair of a task
    /// at every step of the search, and `pairs` is ten times as wide.
    key_of: Vec<u32>,
}

impl KeyTable {
    /// The number of the pair (`key`, `value`).
    pub fn intern(&mut self, key: &str, value: &Value) -> usize {
        let k = match self.key_index.get(key) {
            Some(&k) => k,
            None => {
                let k = self.keys.len();
                self.keys.push(key.to_string());
                self.key_index.insert(key.to_string(), k);
                self.pairs_of.push(Vec::new());
                k
            }
        };
        let text = value.to_string();
        if let Some(&p) = self.pair_index.get(&(k, text.clone())) {
            return p;
        }
        let p = self.pairs.len();
        self.pairs.push((k, value.clone()));
        self.key_of
            .push(u32::try_from(k).expect("fewer than 2^32 metadata keys in one history"));
        self.pair_index.insert((k, text), p);
        self.pairs_of[k].push(p);
        p
    }

    /// The number of the pair (`key`, `value`), if a request set it.
    pub fn get(&self, key: &str, value: &Value) -> Option<usize> {
        let k = *self.key_index.get(key)?;
        self.pair_index.get(&(k, value.to_string())).copied()
    }

    /// The key of pair `p`.
    pub fn key(&self, p: usize) -> &str {
        &self.keys[self.pairs[p].0]
    }

    /// The value of pair `p`.
    pub fn value(&self, p: usize) -> &Value {
        &self.pairs[p].1
    }

    /// Every pair with the same key as `p` (`p` included).
    pub fn same_key(&self, p: usize) -> &[usize] {
        &self.pairs_of[self.pairs[p].0]
    }

    /// The number of the key of pair `p`.
    pub fn key_number(&self, p: usize) -> usize {
        self.key_of[p] as usize
    }

    /// `key=value` of pair `p`, for witnesses.
    pub fn show(&self, p: usize) -> String {
        format!("{}={}", self.key(p), self.value(p))
    }

    /// The interned pairs `metadata` holds, and whether it holds anything else (a key or
    /// a value no request set).
    pub fn view(&self, metadata: Option<&serde_json::Map<String, Value>>) -> (PairSet, bool) {
        let mut bits = PairSet::default();
        let mut foreign = false;
        for (k, v) in metadata.into_iter().flatten() {
            match self.get(k, v) {
                Some(p) => bits.insert(p),
                None => foreign = true,
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
    pub metadata: PairSet,
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

    /// The metadata pairs (interned) the request sets.
    pub fn metadata_pairs<'a>(&'a self, keys: &'a KeyTable) -> impl Iterator<Item = usize> + 'a {
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
            .filter_map(|(k, v)| keys.get(k, v))
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
    /// Whether an unanswered request can only have taken effect before its recorded
    /// completion time. True when the recorder made sure its session was dead by then: the
    /// race driver kills the adapter's whole process group (or ran an in-process request to
    /// its end) before it records `info`. An adapter that hands requests to a process
    /// outside its group breaks this; `false` (the default) assumes nothing.
    pub info_bounded: bool,
    /// The interned metadata pairs each operation sets, by history index, computed once
    /// when it is pushed (the checker asks several times per operation, and each lookup
    /// formats and hashes the value). Read through [`History::pairs`].
    pub op_pairs: Vec<Box<[u32]>>,
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

    /// Records one request and its outcome in one call, for callers outside the race
    /// driver (the runner's `concurrent` blocks): `answer` is the typed answer, or the
    /// target error that left the request unanswered. The answer is reduced to a view right
    /// away, so call [`History::intern_request`] for every request of the block before the
    /// block starts: an answer holding a value no interned request wrote counts as foreign.
    pub fn record(
        &mut self,
        session: SessionId,
        writer: Option<u32>,
        request: Request,
        invoke: Duration,
        at: Duration,
        answer: Result<taskproof_core::protocol::Response, String>,
    ) {
        use taskproof_core::protocol::Response;
        self.intern_request(&request);
        let completion = match answer {
            Ok(Response::Task(t)) => Completion::Ok {
                at,
                task: Some(TaskView::new(&t, &self.keys)),
            },
            Ok(Response::Error(f)) => Completion::Fail {
                at,
                kind: f.kind,
                message: f.message,
            },
            Ok(_) => Completion::Ok { at, task: None },
            Err(reason) => Completion::Info { at, reason },
        };
        self.push(Operation {
            index: 0,
            session,
            writer,
            request,
            invoke,
            completion,
        });
    }

    /// Appends an operation, numbering it. Its metadata keys must be interned already.
    pub fn push(&mut self, mut op: Operation) {
        op.index = self.ops.len();
        if self.op_pairs.len() == op.index {
            let pairs: Box<[u32]> = op.metadata_pairs(&self.keys).map(|p| p as u32).collect();
            self.op_pairs.push(pairs);
        }
        self.ops.push(op);
    }

    /// The interned metadata pairs `op` sets: remembered when it was pushed, else looked up.
    pub fn pairs<'a>(&'a self, op: &'a Operation) -> impl Iterator<Item = usize> + 'a {
        let cached = self
            .op_pairs
            .get(op.index)
            .filter(|_| self.ops.get(op.index).is_some_and(|o| std::ptr::eq(o, op)));
        let (hit, miss) = match cached {
            Some(p) => (Some(p.iter().map(|&p| p as usize)), None),
            None => (None, Some(op.metadata_pairs(&self.keys))),
        };
        hit.into_iter().flatten().chain(miss.into_iter().flatten())
    }

    /// The interned metadata pairs `op` sets, as a slice: borrowed when they were
    /// remembered at [`History::push`], else looked up.
    pub fn pair_slice<'a>(&'a self, op: &'a Operation) -> std::borrow::Cow<'a, [u32]> {
        match self
            .op_pairs
            .get(op.index)
            .filter(|_| self.ops.get(op.index).is_some_and(|o| std::ptr::eq(o, op)))
        {
            Some(p) => std::borrow::Cow::Borrowed(p),
            None => {
                std::borrow::Cow::Owned(op.metadata_pairs(&self.keys).map(|p| p as u32).collect())
            }
        }
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
    fn pair_sets_compare_as_sets() {
        let mut a = PairSet::default();
        a.insert(3);
        a.insert(130);
        let mut b = PairSet::default();
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
    fn setting_a_key_replaces_its_value_whatever_its_history() {
        // Ten thousand values of one key were written; the set holds one, and setting the
        // key again looks at the set, not at the key's history.
        let mut keys = KeyTable::default();
        let pairs: Vec<usize> = (0..10_000).map(|v| keys.intern("a", &json!(v))).collect();
        let b = keys.intern("b", &json!(1));
        let mut s = PairSet::default();
        s.insert(b);
        for &p in &pairs {
            s.set(&keys, p);
        }
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![pairs[9_999], b]);
        s.set(&keys, pairs[3]);
        assert_eq!(s.len(), 2);
        assert!(s.contains(pairs[3]) && !s.contains(pairs[9_999]) && s.contains(b));
        assert_eq!(keys.key_number(pairs[3]), keys.key_number(pairs[0]));
    }

    #[test]
    fn record_maps_answers_to_completions() {
        use taskproof_core::protocol::{Failure, Response};
        use taskproof_core::task::Patch;
        let list: taskproof_core::task::ListName = "l".parse().unwrap();
        let mut m = serde_json::Map::new();
        m.insert("a".into(), json!(1));
        let set = Request::Update {
            list: list.clone(),
            id: TaskId(1),
            patch: Patch {
                metadata: Change::Set(m.clone()),
                ..Patch::default()
            },
        };
        let mut h = History::default();
        h.intern_request(&set);
        let mut t = Task::new(TaskId(1), "a");
        t.metadata = Some(m);
        let ms = Duration::from_millis;
        h.record(1, Some(0), set.clone(), ms(1), ms(2), Ok(Response::Task(t)));
        let refused = Response::Error(Failure::new(ErrorKind::NotFound, "gone"));
        h.record(1, Some(0), set.clone(), ms(3), ms(4), Ok(refused));
        h.record(2, Some(1), set, ms(5), ms(6), Err("killed".into()));
        assert_eq!(h.counts(), (1, 1, 1));
        assert_eq!(h.ops[2].index, 2);
        let p = h.keys.get("a", &json!(1)).unwrap();
        assert!(h.ops[0].answer().unwrap().metadata.contains(p));
        assert_eq!(
            h.ops[0].metadata_pairs(&h.keys).collect::<Vec<_>>(),
            vec![p]
        );
    }

    #[test]
    fn views_keep_only_written_values() {
        let mut keys = KeyTable::default();
        let a = keys.intern("w1_0", &json!(0));
        let b = keys.intern("w1_0", &json!(8));
        assert_eq!(keys.same_key(a), &[a, b]);
        let mut t = Task::new(TaskId(1), "a");
        t.metadata = Some(json!({"w1_0": 8}).as_object().unwrap().clone());
        let v = TaskView::new(&t, &keys);
        assert!(v.metadata.contains(b) && !v.metadata.contains(a) && !v.foreign);
        t.metadata = Some(json!({"w1_0": 5}).as_object().unwrap().clone());
        let v = TaskView::new(&t, &keys);
        assert!(v.metadata.is_empty() && v.foreign);
    }
}
