//! Which folders to audit: the PATH given (one list folder, or a folder of lists), or every
//! list under Claude Code's task root, `$CLAUDE_CONFIG_DIR/tasks`, else `~/.claude/tasks`.
//!
//! The root the user names is opened following links (they chose it); everything inside it
//! is opened without following one, so a list folder that is a link is a finding (S17), not
//! a way out of the root.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rustix::fs::FileType;

use crate::CheckError;
use crate::finding::{Finding, FindingKind};
use taskproof_core::protocol::Layout;
use taskproof_store::{Dir, HIGHWATERMARK_NAME, JOURNAL_NAME, LOCK_NAME, ReadError};

/// Where Claude Code keeps its task lists, from `CLAUDE_CONFIG_DIR` and `HOME` as given.
pub fn default_root(config_dir: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    match config_dir.filter(|c| !c.is_empty()) {
        Some(c) => Some(PathBuf::from(c).join("tasks")),
        None => home
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".claude").join("tasks")),
    }
}

/// One list folder to audit, and how to open it again (for `--fix`).
#[derive(Debug, Clone)]
pub struct ListLocation {
    pub name: String,
    pub path: PathBuf,
    /// The folder of lists it sits in, opened again by name without following a link; `None`
    /// when the user named the list folder itself.
    parent: Option<PathBuf>,
}

impl ListLocation {
    /// A list folder named directly.
    pub fn direct(path: &Path) -> ListLocation {
        let name = path
            .canonicalize()
            .ok()
            .as_deref()
            .unwrap_or(path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        ListLocation {
            name,
            path: path.to_path_buf(),
            parent: None,
        }
    }

    /// The list `name` inside the folder of lists `root`.
    pub fn in_root(root: &Path, name: &str) -> ListLocation {
        ListLocation {
            name: name.to_string(),
            path: root.join(name),
            parent: Some(root.to_path_buf()),
        }
    }

    /// Opens the folder; never through a link inside a root.
    pub fn open(&self) -> Result<Dir, CheckError> {
        let io = |source| CheckError::io(self.path.clone(), source);
        match &self.parent {
            None => Dir::open_root(&self.path).map_err(io),
            Some(root) => {
                let root = Dir::open_root(root).map_err(io)?;
                match root.open_dir(&self.name) {
                    Ok(Some(d)) => Ok(d),
                    Ok(None) => Err(io(std::io::ErrorKind::NotFound.into())),
                    Err(ReadError::Io(e)) => Err(io(e)),
                    Err(e) => Err(io(std::io::Error::other(e.to_string()))),
                }
            }
        }
    }

    /// The layout its file names suggest.
    pub fn detect_layout(&self, dir: &Dir) -> Result<Layout, CheckError> {
        let entries = dir
            .entries()
            .map_err(|source| CheckError::io(self.path.clone(), source))?;
        Ok(super::audit::detect_layout(
            entries.iter().map(|(n, _)| n.as_str()),
        ))
    }
}

/// The lists found, and what was wrong with the folders themselves.
#[derive(Debug, Default)]
pub struct Discovery {
    pub lists: Vec<ListLocation>,
    pub findings: Vec<Finding>,
}

/// Whether a folder looks like one list rather than a folder of lists: it holds a task file
/// of either layout or one of the store's own files.
fn is_list_folder(entries: &[(String, Option<FileType>)]) -> bool {
    entries.iter().any(|(n, _)| {
        Layout::ClaudeCode.task_id_of(n).is_some()
            || Layout::S07.task_id_of(n).is_some()
            || [LOCK_NAME, HIGHWATERMARK_NAME, JOURNAL_NAME].contains(&n.as_str())
    })
}

/// Finds the lists under `path`. With `is_root`, `path` is a folder of lists (the default
/// root; when it does not exist the error says so, since "nothing there" must not read as
/// "all clean"); otherwise it is whatever the user named, and must exist.
pub fn discover(path: &Path, is_root: bool) -> Result<Discovery, CheckError> {
    let dir = match Dir::open_root(path) {
        Ok(d) => d,
        // No task root is not a clean one: say where it looked.
        Err(e) if is_root && e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CheckError::NoTaskRoot(path.to_path_buf()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CheckError::NoSuchFolder(path.to_path_buf()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(CheckError::NotAFolder(path.to_path_buf()));
        }
        Err(source) => {
            return Err(CheckError::io(path.to_path_buf(), source));
        }
    };
    let mut entries = dir
        .entries()
        .map_err(|source| CheckError::io(path.to_path_buf(), source))?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    if !is_root && (is_list_folder(&entries) || !entries.iter().any(|(_, t)| is_folderish(*t))) {
        return Ok(Discovery {
            lists: vec![ListLocation::direct(path)],
            findings: Vec::new(),
        });
    }
    let mut found = Discovery::default();
    for (name, ft) in entries {
        if name.starts_with('.') || !is_folderish(ft) {
            continue;
        }
        // The folder's listing may not say; ask without following a link.
        let ft = match ft {
            Some(t) => Some(t),
            None => dir.entry_type(&name).ok().flatten(),
        };
        if ft == Some(FileType::Symlink) {
            // Only a link that stands for a folder pretends to be a list.
            if path.join(&name).is_dir() {
                found.findings.push(Finding::new(
                    &name,
                    ".",
                    FindingKind::Symlink,
                    "the list folder is a symbolic link; a store never follows it".into(),
                ));
            }
            continue;
        }
        match dir.open_dir(&name) {
            Ok(Some(_)) => found.lists.push(ListLocation::in_root(path, &name)),
            Ok(None) | Err(ReadError::Special) => {}
            Err(e) => {
                found.findings.push(Finding::new(
                    &name,
                    ".",
                    FindingKind::NotAFile,
                    format!("the list folder cannot be opened: {e}"),
                ));
            }
        }
    }
    Ok(found)
}

/// A folder, a link (judged when opened) or an entry whose type the folder did not say.
fn is_folderish(ft: Option<FileType>) -> bool {
    matches!(
        ft,
        None | Some(FileType::Directory) | Some(FileType::Symlink)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_root_prefers_claude_config_dir() {
        assert_eq!(
            default_root(Some("/c".into()), Some("/h".into())),
            Some(PathBuf::from("/c/tasks"))
        );
        assert_eq!(
            default_root(None, Some("/h".into())),
            Some(PathBuf::from("/h/.claude/tasks"))
        );
        assert_eq!(
            default_root(Some("".into()), Some("/h".into())),
            Some(PathBuf::from("/h/.claude/tasks"))
        );
        assert_eq!(default_root(None, None), None);
    }
}
