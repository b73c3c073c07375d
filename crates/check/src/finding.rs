//! What the audit reports: one [`Finding`] per problem, naming the list, the file, the SPEC
//! rule it breaks and, when it can be repaired safely, the [`Repair`] `--fix` would make.
//!
//! Findings are results, not errors: an audit that finds a cycle ran fine. Only a folder that
//! cannot be read at all is an error ([`super::CheckError`]).

use taskproof_core::rule::Rule;
use taskproof_core::task::TaskId;

/// What kind of problem a finding is. The kebab-case names are part of the JSON output
/// (format version 1) and stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingKind {
    /// A task file that is not valid JSON (S15).
    MalformedJson,
    /// A task file whose fields are missing or mistyped (S15).
    Schema,
    /// A status other than `pending`, `in_progress` or `completed` (S15).
    UnknownStatus,
    /// A task file whose `id` is not the id in its name (S15).
    IdMismatch,
    /// A task file (or list folder, or store file) that is not a regular file or folder (S15).
    NotAFile,
    /// A symbolic link inside the store (S17).
    Symlink,
    /// A dependency cycle (S7).
    Cycle,
    /// An unfinished task that can never become ready: it waits on a cycle (S7).
    Deadlocked,
    /// A reference to an id that was never assigned in the list (S6).
    Dangling,
    /// A reference to an id that was assigned and whose task is gone: left by a delete (S10).
    Orphan,
    /// An edge recorded on one side only (S8).
    HalfEdge,
    /// A completed task with a blocker that is not completed (S5).
    CompletedBlocked,
    /// A task made `in_progress` while a blocker is not completed (S5). Only a hook reports
    /// it, about the change it judges: Claude Code itself lets an agent start such a task.
    StartedBlocked,
    /// A `.highwatermark` below the highest id, or unreadable (S1).
    Highwatermark,
    /// Two task files holding the same id (S1).
    DuplicateId,
    /// A temporary file left by a writer that died mid-write (S18).
    StaleTemp,
    /// A journal left by a writer that died in the middle of a multi-file change (S14).
    InterruptedChange,
    /// The list's audit log disagrees with its tasks, or cannot be read (`docs/audit.md`).
    AuditLog,
    /// A task the hook's journal saw is gone, and no delete was asked for (S14).
    Vanished,
    /// A list that had tasks holds none, and without a journal nothing tells whether they
    /// were deleted or reset (S14).
    Emptied,
    /// The hook's journal of the list cannot be used, or has lines that were skipped.
    Journal,
    /// A task of a session's own list that the session, still running, no longer reads: it
    /// works in another list (S14, within reach; [`crate::strand`]).
    Stranded,
    /// A list folder that is gone while every task its journal had live is in another list,
    /// byte for byte: it moved ([`crate::gone`]).
    Moved,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::MalformedJson => "malformed-json",
            FindingKind::Schema => "schema",
            FindingKind::UnknownStatus => "unknown-status",
            FindingKind::IdMismatch => "id-mismatch",
            FindingKind::NotAFile => "not-a-file",
            FindingKind::Symlink => "symlink",
            FindingKind::Cycle => "cycle",
            FindingKind::Deadlocked => "deadlocked",
            FindingKind::Dangling => "dangling",
            FindingKind::Orphan => "orphan",
            FindingKind::HalfEdge => "half-edge",
            FindingKind::CompletedBlocked => "completed-blocked",
            FindingKind::StartedBlocked => "started-blocked",
            FindingKind::Highwatermark => "highwatermark",
            FindingKind::DuplicateId => "duplicate-id",
            FindingKind::StaleTemp => "stale-temp",
            FindingKind::InterruptedChange => "interrupted-change",
            FindingKind::AuditLog => "audit-log",
            FindingKind::Vanished => "vanished",
            FindingKind::Emptied => "emptied",
            FindingKind::Journal => "journal",
            FindingKind::Stranded => "stranded",
            FindingKind::Moved => "moved",
        }
    }

    /// The SPEC rule the finding breaks; `None` for the audit trail and the journal, which
    /// are taskproof's own files and no rule of SPEC §3.
    pub fn rule(self) -> Option<Rule> {
        match self {
            FindingKind::MalformedJson
            | FindingKind::Schema
            | FindingKind::UnknownStatus
            | FindingKind::IdMismatch
            | FindingKind::NotAFile => Some(Rule::S15),
            FindingKind::Symlink => Some(Rule::S17),
            FindingKind::Cycle | FindingKind::Deadlocked => Some(Rule::S7),
            FindingKind::Dangling => Some(Rule::S6),
            FindingKind::Orphan => Some(Rule::S10),
            FindingKind::HalfEdge => Some(Rule::S8),
            FindingKind::CompletedBlocked | FindingKind::StartedBlocked => Some(Rule::S5),
            FindingKind::Highwatermark | FindingKind::DuplicateId => Some(Rule::S1),
            FindingKind::StaleTemp => Some(Rule::S18),
            FindingKind::InterruptedChange
            | FindingKind::Vanished
            | FindingKind::Emptied
            | FindingKind::Stranded => Some(Rule::S14),
            FindingKind::AuditLog | FindingKind::Journal | FindingKind::Moved => None,
        }
    }

    /// Whether a hook refuses an action that leaves this finding on the tasks it touched.
    /// Only what makes a list unsafe to work from blocks: a cycle, a completed task with an
    /// open blocker, a reference to nothing, a task the store cannot read. A missing mirror
    /// or an orphan does not, since Claude Code itself leaves those behind (SPEC §4) and a
    /// hook that blocked them would block every dependency an agent adds.
    pub fn blocks_hook(self) -> bool {
        matches!(
            self,
            FindingKind::MalformedJson
                | FindingKind::Schema
                | FindingKind::UnknownStatus
                | FindingKind::IdMismatch
                | FindingKind::Cycle
                | FindingKind::Dangling
                | FindingKind::CompletedBlocked
                | FindingKind::StartedBlocked
                | FindingKind::DuplicateId
        )
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which edge list of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeField {
    Blocks,
    BlockedBy,
}

impl EdgeField {
    /// The field's name in a task file.
    pub fn key(self) -> &'static str {
        match self {
            EdgeField::Blocks => "blocks",
            EdgeField::BlockedBy => "blockedBy",
        }
    }
}

/// A change `--fix` can make without losing anything a user or agent wrote.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Repair {
    /// Add `id` to `field` of the task in `file` (mirror an edge, S8).
    AddEdge {
        file: String,
        field: EdgeField,
        id: TaskId,
    },
    /// Remove `id` from `field` of the task in `file` (a reference to a missing task).
    RemoveRef {
        file: String,
        field: EdgeField,
        id: TaskId,
    },
    /// Write `.highwatermark` as `to`.
    RaiseHighwatermark { to: u64 },
    /// Remove a temporary file no live writer owns.
    RemoveTemp { name: String },
    /// Replay the journal a dead writer left, as the store would before its next operation.
    ReplayJournal,
    /// Finish the change and its audit record a dead writer left in `.audit.pending`, as the
    /// store would before its next operation.
    FinishAuditRecord,
    /// Write a vanished task's file back from the journal (`--restore`, never `--fix`), into
    /// the list folder `into`; `version` says which version of it the journal gave, and why
    /// newer ones were passed over.
    Restore {
        file: String,
        into: String,
        version: Option<String>,
    },
    /// Write `.highwatermark` of the list folder `into` as `to` (after a restore).
    RestoreHighwatermark { into: String, to: u64 },
    /// Flush what a restore wrote into the list folder `into` to disk (said when it failed).
    RestoreSync { into: String },
    /// Record what a restore wrote in the journal at `journal` (said when it failed).
    RestoreJournal { journal: String },
    /// Restore what vanished from a list (said when the whole restore of a list is skipped).
    RestoreVanished,
    /// Write a task of a list out of reach (`file`) into the list folder `into` its session
    /// reads now; `how` says under which name and why ([`crate::strand`]).
    PutInReach {
        file: String,
        into: String,
        how: String,
    },
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repair::AddEdge { file, field, id } => {
                write!(f, "add {id} to {} of {file}", field.key())
            }
            Repair::RemoveRef { file, field, id } => {
                write!(f, "remove {id} from {} of {file}", field.key())
            }
            Repair::RaiseHighwatermark { to } => write!(f, "set .highwatermark to {to}"),
            Repair::RemoveTemp { name } => write!(f, "remove the temporary file {name}"),
            Repair::ReplayJournal => f.write_str("replay the interrupted change in .journal"),
            Repair::FinishAuditRecord => {
                f.write_str("finish the interrupted change and its audit record in .audit.pending")
            }
            Repair::Restore {
                file,
                into,
                version: None,
            } => write!(f, "restore {file} into {into}"),
            Repair::Restore {
                file,
                into,
                version: Some(v),
            } => write!(f, "restore {file} into {into}: {v}"),
            Repair::RestoreHighwatermark { into, to } => {
                write!(f, "set .highwatermark of {into} to {to}")
            }
            Repair::RestoreSync { into } => write!(f, "flush what was restored into {into}"),
            Repair::RestoreJournal { journal } => {
                write!(f, "record the restore in the journal {journal}")
            }
            Repair::RestoreVanished => f.write_str("restore what vanished"),
            Repair::PutInReach { file, into, how } => {
                write!(f, "put {file} into {into}: {how}")
            }
        }
    }
}

/// One problem in one list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The list's name (its folder's name; `stdin` in hook mode).
    pub list: String,
    /// The file inside the list folder the finding is about; `.` for the folder itself.
    pub file: String,
    pub kind: FindingKind,
    /// What is wrong, in plain words.
    pub message: String,
    /// The tasks involved, so hook mode can tell whether a change touched them.
    pub tasks: Vec<TaskId>,
    /// What `--fix` would do about it, when that is safe.
    pub repair: Option<Repair>,
}

impl Finding {
    pub fn new(list: &str, file: impl Into<String>, kind: FindingKind, message: String) -> Self {
        Finding {
            list: list.to_string(),
            file: file.into(),
            kind,
            message,
            tasks: Vec::new(),
            repair: None,
        }
    }

    pub fn involving(mut self, tasks: impl IntoIterator<Item = TaskId>) -> Self {
        self.tasks = tasks.into_iter().collect();
        self
    }

    pub fn repair(mut self, repair: Repair) -> Self {
        self.repair = Some(repair);
        self
    }

    pub fn rule(&self) -> Option<Rule> {
        self.kind.rule()
    }

    /// What a report cites for the finding: its rule (`S14`), or the file of taskproof's own
    /// it is about: `audit` for the audit trail, `journal` for the hook's journal.
    pub fn cites(&self) -> String {
        match (self.rule(), self.kind) {
            (Some(r), _) => r.to_string(),
            (None, FindingKind::Journal) => "journal".to_string(),
            (None, _) => "audit".to_string(),
        }
    }
}
