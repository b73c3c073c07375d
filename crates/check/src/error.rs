//! The one error of a check: a folder that cannot be audited as asked, or a restore that
//! cannot be made. Everything wrong *inside* a folder is a finding, not an error.

use std::path::{Path, PathBuf};

/// Why a check could not run as asked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("audit {0}: no such folder")]
    NoSuchFolder(PathBuf),
    /// The default task root is missing: Claude Code has written no task list there (yet),
    /// which is not the same as a folder of lists that are all clean.
    #[error(
        "audit {0}: no such folder, so there is no task list to check (Claude Code keeps its lists in $CLAUDE_CONFIG_DIR/tasks, else ~/.claude/tasks, once it writes one); name a folder to check another"
    )]
    NoTaskRoot(PathBuf),
    #[error("audit {0}: not a folder; name a list folder or a folder of lists")]
    NotAFolder(PathBuf),
    /// The path is said once: the store's errors often carry it already, and this error is
    /// the end of the chain (no `#[source]`), so `{:#}` does not print the cause twice.
    #[error("read {path}: {}", reason(path, error))]
    Io {
        path: PathBuf,
        // Not named `source`: thiserror would make it the cause and print it a second time.
        error: std::io::Error,
    },
    /// `--restore` on a list the hook never journaled.
    #[error(
        "restore {list}: there is no journal at {path}, so there is nothing to restore from (the hook keeps one once installed with its PostToolUse entry, docs/check.md \"The journal\"); nothing was changed"
    )]
    NoJournal { list: String, path: PathBuf },
    /// `--restore` with a journal that cannot be used (its own error names the file).
    #[error("restore {list}: failed to {error}; nothing was changed")]
    Journal {
        list: String,
        error: super::journal::JournalError,
    },
    /// The list a restore would write into cannot be used.
    #[error("restore {list} into {into}: {why}; nothing was changed")]
    RestoreTarget {
        list: String,
        into: PathBuf,
        why: String,
    },
    /// `--journal` names one list's journal, and the folder holds several lists.
    #[error(
        "--journal names the journal of one list, and {0} holds {1} lists; name the list folder"
    )]
    JournalForMany(PathBuf, usize),
    /// `--into` names one new list, and the folder holds several lists (or none).
    #[error(
        "--into names one new list, and {0} holds {1} lists, which cannot all be restored into it; name the list folder, or leave --into out to restore each list into a new list of its own"
    )]
    IntoForMany(PathBuf, usize),
}

impl CheckError {
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> CheckError {
        CheckError::Io {
            path: path.into(),
            error,
        }
    }
}

/// The cause without the path in front of it, when the store's error already names it.
fn reason(path: &Path, e: &std::io::Error) -> String {
    let text = e.to_string();
    let shown = path.display().to_string();
    match text.strip_prefix(&shown).and_then(|r| r.strip_prefix(": ")) {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_names_its_path_once() {
        let path = PathBuf::from("/t/a");
        let store_error =
            std::io::Error::other("/t/a: Too many levels of symbolic links (os error 40)");
        let e = CheckError::io(&path, store_error);
        // The error and its sources, as a caller that prints the whole chain shows them.
        let mut chain = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            chain.push_str(&format!(": {s}"));
            source = s.source();
        }
        assert_eq!(
            chain,
            "read /t/a: Too many levels of symbolic links (os error 40)"
        );
        let plain = CheckError::io(path, std::io::ErrorKind::NotFound.into());
        assert_eq!(plain.to_string(), "read /t/a: entity not found");
    }
}
