//! What the checker reports: the kinds of anomaly (with the rule each breaks and which
//! profiles promise against it), a witness that explains one anomaly in plain words, and the
//! findings of a whole run.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use taskproof_core::task::TaskId;
use taskproof_profile::Profile;

/// The kinds of anomaly, as the report names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Witness {
    pub kind: AnomalyKind,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_task_id",
        deserialize_with = "deserialize_task_id"
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
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub observation: bool,
    /// In a race where each target keeps its own tasks, the target whose history the
    /// witness is of (its `ops` index that history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Witness {
    pub(super) fn new(
        kind: AnomalyKind,
        task: Option<TaskId>,
        text: String,
        ops: Vec<usize>,
    ) -> Witness {
        Witness {
            kind,
            task,
            text,
            ops,
            at: None,
            observation: false,
            target: None,
        }
    }
}

fn serialize_task_id<S: serde::Serializer>(id: &Option<TaskId>, s: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(i) => s.serialize_str(&i.to_string()),
        None => s.serialize_none(),
    }
}

fn deserialize_task_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<TaskId>, D::Error> {
    match Option::<String>::deserialize(d)? {
        Some(s) => s.parse().map(Some).map_err(serde::de::Error::custom),
        None => Ok(None),
    }
}

fn deserialize_task_ids<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<TaskId>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| s.parse().map_err(serde::de::Error::custom))
        .collect()
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinSummary {
    pub tasks: usize,
    pub linearizable: usize,
    pub nonlinearizable: usize,
    /// Tasks whose search ran out of budget: neither pass nor fail.
    pub unknown: usize,
    pub steps: u64,
    /// Tasks whose check was left unknown.
    #[serde(
        default,
        serialize_with = "serialize_task_ids",
        deserialize_with = "deserialize_task_ids"
    )]
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

    pub(super) fn add(&mut self, witnesses: Vec<Witness>) {
        for w in witnesses {
            *self.counts.entry(w.kind).or_default() += 1;
            self.witnesses.push(w);
        }
    }
}
