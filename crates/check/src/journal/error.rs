//! Why a journal could not be used, and what a reader skipped in it.

use std::io;
use std::path::PathBuf;

use super::*;

/// Why a journal could not be used. Each names the file; a bad line is not an error but a
/// [`Problem`] of a journal that is otherwise read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("read the journal {path}: {error}")]
    Io { path: PathBuf, error: io::Error },
    #[error("write the journal {path}: {error}")]
    Write { path: PathBuf, error: io::Error },
    #[error(
        "use the journal {path}: there is no journal there (the hook writes it once installed with its PostToolUse entry, docs/check.md)"
    )]
    Missing { path: PathBuf },
    #[error(
        "use the journal {path}: it is a symbolic link; taskproof never reads or writes through one"
    )]
    Symlink { path: PathBuf },
    #[error(
        "use the journal {path}: line 1 is not a taskproof journal's first line ({why}); the file is left alone"
    )]
    Foreign { path: PathBuf, why: String },
    #[error(
        "use the journal {path}: it is in format {found}, newer than the {FORMAT} this taskproof reads; the file is left alone"
    )]
    Newer { path: PathBuf, found: u64 },
    #[error(
        "use the journal {path}: it is the journal of list {theirs:?} ({folder}), not of {ours:?}; the file is left alone"
    )]
    OtherList {
        path: PathBuf,
        theirs: String,
        folder: String,
        ours: String,
    },
    #[error(
        "write the journal {path}: it holds {bytes} bytes, and the list's live tasks alone take more than the {MAX_BYTES} a compaction keeps; nothing more is journaled"
    )]
    TooLarge { path: PathBuf, bytes: u64 },
}

/// A line of a journal that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based.
    pub line: usize,
    pub what: String,
}
