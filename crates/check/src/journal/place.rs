//! Where a list's journal lives, and the clock its entries carry.

use std::path::{Path, PathBuf};

/// The hidden folder beside the lists that holds their journals.
pub const JOURNAL_DIR: &str = ".taskproof-journal";

/// The journal of the list folder at `list_dir`: `{parent}/.taskproof-journal/{name}.jsonl`.
/// `None` when the folder has no parent (the file-system root).
pub fn path_for(list_dir: &Path, name: &str) -> Option<PathBuf> {
    // The parent of the folder as the user reaches it: `check .` inside a list names the
    // same journal as `check ~/.claude/tasks/list`.
    let full = list_dir
        .canonicalize()
        .unwrap_or_else(|_| list_dir.to_path_buf());
    let parent = full.parent()?;
    Some(parent.join(JOURNAL_DIR).join(format!("{name}.jsonl")))
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
