//! Deliberately broken variants of the strict store, one per rule, so the harness can prove
//! that its scenarios, race workloads and fuzzer catch each kind of bug. A mutant is the
//! reference store with exactly one check or mechanism switched off; nothing else differs.

use std::fmt;
use std::str::FromStr;

use taskproof_core::rule::Rule;

/// One broken rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mutant {
    /// S7: dependency cycles are accepted.
    NoCycleCheck,
    /// S6: edges to missing tasks are accepted (kept on one side).
    NoReferenceCheck,
    /// S8: an edge is written on one side only.
    NoMirror,
    /// S10: delete leaves the id in other tasks' edges.
    OrphansOnDelete,
    /// S3: any status string is accepted and stored.
    AnyStatus,
    /// S4: a completed task may go back to pending or in_progress.
    FinalNotFinal,
    /// S5: blockers are not enforced.
    NoAndBlocking,
    /// S1: the next id is the highest existing id plus one, so ids are reused after a delete.
    ReusedIds,
    /// S13: every list is stored in one folder.
    ListsNotIsolated,
    /// S17: task files are read and written through symbolic links.
    FollowsSymlinks,
    /// S13: list names are not checked, so `../x` writes outside the root.
    EscapesRoot,
    /// S16: unknown top-level fields are dropped on update.
    UnknownFieldsDropped,
    /// S15: unreadable files are silently left out of `list`, and `get` says not_found.
    CorruptHidden,
    /// S12: a metadata patch replaces the stored object instead of merging into it.
    MetadataReplaced,
    /// S14: state lives in a private folder of the instance, so a new process sees nothing.
    MemoryOnly,
    /// S19: no lock: read-modify-write races between processes.
    NoLock,
    /// S18: files are truncated and rewritten in place, so readers can see partial files.
    TruncateWrite,
    /// S20: claim reads and checks under the lock but writes after releasing it.
    ClaimWithoutLock,
    /// S19: delete takes no lock, so an update that read the task under the lock writes it
    /// back after the delete was acknowledged (the deleted task comes back).
    DeleteWithoutLock,
}

impl Mutant {
    pub const ALL: [Mutant; 19] = [
        Mutant::NoCycleCheck,
        Mutant::NoReferenceCheck,
        Mutant::NoMirror,
        Mutant::OrphansOnDelete,
        Mutant::AnyStatus,
        Mutant::FinalNotFinal,
        Mutant::NoAndBlocking,
        Mutant::ReusedIds,
        Mutant::ListsNotIsolated,
        Mutant::FollowsSymlinks,
        Mutant::EscapesRoot,
        Mutant::UnknownFieldsDropped,
        Mutant::CorruptHidden,
        Mutant::MetadataReplaced,
        Mutant::MemoryOnly,
        Mutant::NoLock,
        Mutant::TruncateWrite,
        Mutant::ClaimWithoutLock,
        Mutant::DeleteWithoutLock,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mutant::NoCycleCheck => "no-cycle-check",
            Mutant::NoReferenceCheck => "no-reference-check",
            Mutant::NoMirror => "no-mirror",
            Mutant::OrphansOnDelete => "orphans-on-delete",
            Mutant::AnyStatus => "any-status",
            Mutant::FinalNotFinal => "final-not-final",
            Mutant::NoAndBlocking => "no-and-blocking",
            Mutant::ReusedIds => "reused-ids",
            Mutant::ListsNotIsolated => "lists-not-isolated",
            Mutant::FollowsSymlinks => "follows-symlinks",
            Mutant::EscapesRoot => "escapes-root",
            Mutant::UnknownFieldsDropped => "unknown-fields-dropped",
            Mutant::CorruptHidden => "corrupt-hidden",
            Mutant::MetadataReplaced => "metadata-replaced",
            Mutant::MemoryOnly => "memory-only",
            Mutant::NoLock => "no-lock",
            Mutant::TruncateWrite => "truncate-write",
            Mutant::ClaimWithoutLock => "claim-without-lock",
            Mutant::DeleteWithoutLock => "delete-without-lock",
        }
    }

    /// The rule this mutant breaks.
    pub fn rule(self) -> Rule {
        match self {
            Mutant::NoCycleCheck => Rule::S7,
            Mutant::NoReferenceCheck => Rule::S6,
            Mutant::NoMirror => Rule::S8,
            Mutant::OrphansOnDelete => Rule::S10,
            Mutant::AnyStatus => Rule::S3,
            Mutant::FinalNotFinal => Rule::S4,
            Mutant::NoAndBlocking => Rule::S5,
            Mutant::ReusedIds => Rule::S1,
            Mutant::ListsNotIsolated => Rule::S13,
            Mutant::FollowsSymlinks => Rule::S17,
            Mutant::EscapesRoot => Rule::S13,
            Mutant::UnknownFieldsDropped => Rule::S16,
            Mutant::CorruptHidden => Rule::S15,
            Mutant::MetadataReplaced => Rule::S12,
            Mutant::MemoryOnly => Rule::S14,
            Mutant::NoLock => Rule::S19,
            Mutant::TruncateWrite => Rule::S18,
            Mutant::ClaimWithoutLock => Rule::S20,
            Mutant::DeleteWithoutLock => Rule::S19,
        }
    }

    /// Whether only concurrent runs (the race harness) can expose this mutant: a single
    /// session sees the reference behaviour.
    pub fn needs_concurrency(self) -> bool {
        matches!(
            self,
            Mutant::NoLock
                | Mutant::TruncateWrite
                | Mutant::ClaimWithoutLock
                | Mutant::DeleteWithoutLock
        )
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mutant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mutant::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Mutant::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mutant {s:?}; expected one of {}", names.join(", "))
            })
    }
}
