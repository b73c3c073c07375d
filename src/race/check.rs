//! The checker: counts the anomalies of a race run from its history and the final state,
//! and explains each with a minimal witness in plain words.
//!
//! Each check is a function of the history and the final listing, so other parts of the
//! project (the runner's `concurrent` blocks) can call the one they need, e.g.
//! [`lost_metadata`] for "every acknowledged metadata key survives".

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use serde::Serialize;

use super::history::{Completion, History, Operation, TaskView, secs};
use super::linear::{self, Verdict};
use super::model::{TaskModel, final_views, partition, prune_unobserved};
use crate::graph::Graph;
use crate::profile::Profile;
use crate::protocol::Request;
use crate::task::{Change, Task, TaskId};

/// The kinds of anomaly, as the report names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    /// An acknowledged change that the final state does not hold.
    Lost,
    /// One id given to two acknowledged creates, or listed twice.
    DuplicateIds,
    /// A task file that a raw reader found existing but not parsing (S18), counted once
    /// per torn state of the file however often it was read (the raw reads are counted
    /// beside, in the report).
    TornWrites,
    /// A task file that does not parse at the end.
    CorruptFiles,
    /// More than one acknowledged claim of one task (S20).
    DoubleClaims,
    /// A dependency cycle in the final state (S7, S19).
    Cycles,
    /// An edge recorded on one side only in the final state (S8).
    HalfEdges,
    /// A task whose history no sequential order explains (S19).
    Nonlinearizable,
}

impl AnomalyKind {
    pub const ALL: [AnomalyKind; 8] = [
        AnomalyKind::Lost,
        AnomalyKind::DuplicateIds,
        AnomalyKind::TornWrites,
        AnomalyKind::CorruptFiles,
        AnomalyKind::DoubleClaims,
        AnomalyKind::Cycles,
        AnomalyKind::HalfEdges,
        AnomalyKind::Nonlinearizable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AnomalyKind::Lost => "lost",
            AnomalyKind::DuplicateIds => "duplicate_ids",
            AnomalyKind::TornWrites => "torn_writes",
            AnomalyKind::CorruptFiles => "corrupt_files",
            AnomalyKind::DoubleClaims => "double_claims",
            AnomalyKind::Cycles => "cycles",
            AnomalyKind::HalfEdges => "half_edges",
            AnomalyKind::Nonlinearizable => "nonlinearizable",
        }
    }

    /// How the terminal summary says it.
    pub fn label(self) -> &'static str {
        match self {
            AnomalyKind::Lost => "lost",
            AnomalyKind::DuplicateIds => "duplicate ids",
            AnomalyKind::TornWrites => "torn writes",
            AnomalyKind::CorruptFiles => "corrupt files",
            AnomalyKind::DoubleClaims => "double claims",
            AnomalyKind::Cycles => "cycles",
            AnomalyKind::HalfEdges => "half edges",
            AnomalyKind::Nonlinearizable => "nonlinearizable",
        }
    }

    /// The rule of SPEC §3 the anomaly breaks.
    pub fn rule(self) -> &'static str {
        match self {
            AnomalyKind::Lost | AnomalyKind::DuplicateIds | AnomalyKind::Nonlinearizable => "S19",
            AnomalyKind::TornWrites | AnomalyKind::CorruptFiles => "S18",
            AnomalyKind::DoubleClaims => "S20",
            AnomalyKind::Cycles => "S7",
            AnomalyKind::HalfEdges => "S8",
        }
    }

    /// Whether a store held to `profile` promises never to show this anomaly. `strict`
    /// promises every rule. `cc-2.1.17` (SPEC §4) and `s07` (§5) switch off S18 and S19
    /// (concurrent writers may lose updates; ids may be handed out twice; files are written
    /// in place), S7 (cycles are accepted) and S8 (edges are not mirrored, or stop being
    /// mirrored after completion); the exactly-one-winner half of S20 is a concurrency
    /// promise too, and neither makes it (Claude Code 2.1.17 and s07 have no claim; the
    /// naive model's is a check-then-write without a lock), as the suite's concurrent
    /// scenarios hold only `strict` to it. What a profile does not promise is an
    /// observation: reported, never a failure.
    pub fn promised_by(self, profile: Profile) -> bool {
        match profile {
            Profile::Strict => true,
            Profile::Cc2117 | Profile::S07 => false,
        }
    }
}

/// One anomaly, explained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Witness {
    pub kind: AnomalyKind,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_task_id"
    )]
    pub task: Option<TaskId>,
    /// The explanation, in plain words.
    pub text: String,
    /// History indices of the operations involved.
    pub ops: Vec<usize>,
    /// When the anomaly happened, as far as the history tells (since the start of the run):
    /// for a lost change, when the write that dropped it was answered, or else when the
    /// change was acknowledged.
    #[serde(skip)]
    pub at: Option<Duration>,
    /// The profile the run was judged by does not promise against it: reported, not
    /// failed (set by the report).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub observation: bool,
}

impl Witness {
    fn new(kind: AnomalyKind, task: Option<TaskId>, text: String, ops: Vec<usize>) -> Witness {
        Witness {
            kind,
            task,
            text,
            ops,
            at: None,
            observation: false,
        }
    }
}

fn serialize_task_id<S: serde::Serializer>(id: &Option<TaskId>, s: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(i) => s.serialize_str(&i.to_string()),
        None => s.serialize_none(),
    }
}

fn serialize_task_ids<S: serde::Serializer>(ids: &[TaskId], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ids.iter().map(|i| i.to_string()))
}

/// One torn state of a task file: the raw readers found it existing but not parsing. Every
/// read of the same state (the same file with the same inode, modification time, length
/// and bytes) is the same episode, however many times and by however many readers it was
/// read: a reader polling a file that a writer truncated sees that moment again and again,
/// and counting each read would count one torn write thousands of times.
#[derive(Debug, Clone, PartialEq)]
pub struct TornRead {
    /// The reader that saw it first.
    pub reader: usize,
    /// When it was first seen.
    pub at: Duration,
    pub file: String,
    pub len: usize,
    pub error: String,
    /// How many raw reads saw this state.
    pub reads: usize,
}

/// The linearizability verdicts over all tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LinSummary {
    pub tasks: usize,
    pub linearizable: usize,
    pub nonlinearizable: usize,
    /// Tasks whose search ran out of budget: neither pass nor fail.
    pub unknown: usize,
    pub steps: u64,
    /// Tasks whose check was left unknown.
    #[serde(serialize_with = "serialize_task_ids")]
    pub unknown_tasks: Vec<TaskId>,
}

/// Everything the checker found.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub counts: BTreeMap<AnomalyKind, usize>,
    pub witnesses: Vec<Witness>,
    pub lin: LinSummary,
}

impl Findings {
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    pub fn count(&self, k: AnomalyKind) -> usize {
        self.counts.get(&k).copied().unwrap_or(0)
    }

    fn add(&mut self, witnesses: Vec<Witness>) {
        for w in witnesses {
            *self.counts.entry(w.kind).or_default() += 1;
            self.witnesses.push(w);
        }
    }
}

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
    let (removed, cleared) = removed_keys(history);
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
            let (why, cidx) = culprit_text(c, ack, &format!("without {}", keys.show(p)));
            let mut ops = vec![op.index];
            ops.extend(cidx);
            let mut w = Witness::new(
                AnomalyKind::Lost,
                Some(task),
                format!(
                    "{} set metadata {} on task {task} (acknowledged at {}), the last write of that key; {state}{why}",
                    op.who(),
                    keys.show(p),
                    secs(ack)
                ),
                ops,
            );
            w.at = Some(c.map(|c| c.completion.at()).unwrap_or(ack));
            out.push(w);
        }
    }
    out
}

/// A field a patch sets, with the value as text.
fn field_writes(request: &Request) -> Vec<(&'static str, Option<String>)> {
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

fn show(v: &Option<String>) -> String {
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
        let (why, cidx) = culprit_text(c, ack, &format!("with {field} {}", show(&actual)));
        let mut ops = vec![op.index];
        ops.extend(cidx);
        let mut w = Witness::new(
            AnomalyKind::Lost,
            Some(task),
            format!(
                "{} set {field} of task {task} to {} (acknowledged at {}), the latest acknowledged change of that field; the final task has {}{why}",
                op.who(),
                show(v),
                secs(ack),
                show(&actual)
            ),
            ops,
        );
        w.at = Some(c.map(|c| c.completion.at()).unwrap_or(ack));
        out.push(w);
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
        let mut ops = vec![op.index];
        ops.extend(cidx);
        let mut w = Witness::new(
            AnomalyKind::Lost,
            Some(id),
            format!(
                "{} created task {id} with subject {:?} (acknowledged at {}); {found}{why}",
                op.who(),
                new.subject,
                secs(ack)
            ),
            ops,
        );
        w.at = Some(other.map(|c| c.completion.at()).unwrap_or(ack).max(ack));
        out.push(w);
    }
    out
}

/// Ids given to more than one acknowledged create, and ids the final listing holds twice.
pub fn duplicate_ids(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let mut by_id: BTreeMap<TaskId, Vec<&Operation>> = BTreeMap::new();
    for op in history.ops.iter().filter(|o| o.is_ok()) {
        if let (Request::Create { .. }, Some(id)) = (&op.request, op.task_id()) {
            by_id.entry(id).or_default().push(op);
        }
    }
    let mut out = Vec::new();
    for (id, ops) in by_id.into_iter().filter(|(_, v)| v.len() > 1) {
        let first = ops[0];
        for dup in &ops[1..] {
            out.push(Witness::new(
                AnomalyKind::DuplicateIds,
                Some(id),
                format!(
                    "{} and {} were both given id {id} (creates answered at {} and {})",
                    first.who(),
                    dup.who(),
                    secs(first.completion.at()),
                    secs(dup.completion.at())
                ),
                vec![first.index, dup.index],
            ));
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

/// At most one acknowledged claim per task (S20), and its owner is the final owner.
pub fn claims(history: &History, final_tasks: &[Task]) -> Vec<Witness> {
    let fin = final_map(final_tasks);
    let mut by_task: BTreeMap<TaskId, Vec<&Operation>> = BTreeMap::new();
    for op in history.ops.iter().filter(|o| o.is_ok()) {
        if let Request::Claim { id, .. } = &op.request {
            by_task.entry(*id).or_default().push(op);
        }
    }
    let owner_of = |o: &Operation| match &o.request {
        Request::Claim { owner, .. } => owner.clone(),
        _ => unreachable!("claims only"),
    };
    let mut out = Vec::new();
    for (id, mut ops) in by_task {
        ops.sort_by_key(|o| o.completion.at());
        let first = ops[0];
        for dup in &ops[1..] {
            out.push(Witness::new(
                AnomalyKind::DoubleClaims,
                Some(id),
                format!(
                    "task {id} was claimed by {} as {:?} (answered at {}) and again by {} as {:?} (sent at {}, answered at {})",
                    first.who(),
                    owner_of(first),
                    secs(first.completion.at()),
                    dup.who(),
                    owner_of(dup),
                    secs(dup.invoke),
                    secs(dup.completion.at())
                ),
                vec![first.index, dup.index],
            ));
        }
        if ops.len() == 1 {
            let owner = owner_of(first);
            let actual = fin.get(&id).and_then(|t| t.owner.clone());
            if actual.as_deref() != Some(owner.as_str()) {
                let mut w = Witness::new(
                    AnomalyKind::Lost,
                    Some(id),
                    format!(
                        "{} claimed task {id} as {owner:?} (acknowledged at {}); the final task has owner {}",
                        first.who(),
                        secs(first.completion.at()),
                        show(&actual)
                    ),
                    vec![first.index],
                );
                w.at = Some(first.completion.at());
                out.push(w);
            }
        }
    }
    out
}

/// The edges a request adds (`true`) or removes (`false`), as (blocker, blocked).
fn edge_changes(request: &Request) -> Vec<((TaskId, TaskId), bool)> {
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
        let mut w = Witness::new(
            AnomalyKind::Lost,
            Some(b),
            format!(
                "{} {} the edge {a} blocks {b} (acknowledged at {}), the last change of it; the final state {}",
                last.who(),
                if add { "added" } else { "removed" },
                secs(ack),
                if present { "still has it" } else { "lacks it" }
            ),
            vec![last.index],
        );
        w.at = Some(ack);
        out.push(w);
    }
    out
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
            format!("in the final state, {}", crate::graph::cycle_words(&c)),
            Vec::new(),
        ));
    }
    for h in g.half_edges() {
        let text = h.words(crate::graph::task_name);
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
            let model = TaskModel::new(id, &history.keys, &entries);
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
                out.push(Witness::new(
                    AnomalyKind::Nonlinearizable,
                    Some(id),
                    format!(
                        "no sequential order explains task {id}'s history: after {prefix} operations placed in real-time order, {what} fits nowhere: {reason}"
                    ),
                    stuck.into_iter().collect(),
                ));
            }
        }
    }
    (sum, out)
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
