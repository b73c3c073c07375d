//! The journal file under its flock: opened without following links, read whole, and the
//! point where the next entry is appended.

use std::fs::File;
use std::io::{self, Read, Seek};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;

use super::*;

/// A journal file held open under its flock; the flock goes with it when it is dropped.
#[derive(Debug)]
pub struct Locked {
    pub(super) file: File,
    pub(super) path: PathBuf,
}

/// Takes the exclusive flock of the journal at `path` (creating the file and its folder when
/// absent) for a hook run, which reads the list only then and hands the lock to [`record`] or
/// [`record_written`]: two runs on one list (a team's, shared by several Claude Code
/// processes) then journal what they read in the order they read it, and no run appends a
/// version older than one another run appended after reading the list later.
pub fn lock(path: &Path) -> Result<Locked, JournalError> {
    open_locked(path, true, true)?.ok_or_else(|| JournalError::Missing {
        path: path.to_path_buf(),
    })
}

/// Opens the journal at `path` and takes its flock (`exclusive` to write), creating the file
/// (and its folder) when `create`. Retries when a compaction replaced the file between the
/// open and the lock, so the lock is always on the file the path names.
pub(super) fn open_locked(
    path: &Path,
    exclusive: bool,
    create: bool,
) -> Result<Option<Locked>, JournalError> {
    let io = |error| JournalError::Io {
        path: path.to_path_buf(),
        error,
    };
    if create && let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|error| JournalError::Write {
            path: path.to_path_buf(),
            error,
        })?;
    }
    loop {
        let mut options = std::fs::OpenOptions::new();
        options
            .read(true)
            .write(exclusive)
            .create(create)
            .custom_flags(libc_nofollow())
            .mode(0o600);
        let file = match options.open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                return Err(JournalError::Symlink {
                    path: path.to_path_buf(),
                });
            }
            Err(e) => return Err(io(e)),
        };
        let op = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        rustix::fs::flock(file.as_fd(), op).map_err(|e| io(e.into()))?;
        let held = file.metadata().map_err(io)?;
        match std::fs::symlink_metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                return Ok(Some(Locked {
                    file,
                    path: path.to_path_buf(),
                }));
            }
            // Replaced or removed since the open: lock the file the path names now.
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        }
    }
}

/// `O_NOFOLLOW`, for `OpenOptionsExt::custom_flags` (std sets `O_CLOEXEC` itself).
pub(super) fn libc_nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

impl Locked {
    pub(super) fn io(&self, error: io::Error) -> JournalError {
        JournalError::Io {
            path: self.path.clone(),
            error,
        }
    }

    pub(super) fn read_all(&mut self) -> Result<Vec<u8>, JournalError> {
        let mut bytes = Vec::new();
        self.file.rewind().map_err(|e| self.io(e))?;
        self.file.read_to_end(&mut bytes).map_err(|e| self.io(e))?;
        Ok(bytes)
    }

    /// Where the next lines go, without reading the journal beyond its first line (which
    /// must be `list`'s) and the end of its last complete line.
    pub(super) fn append_point(&self, list: &str) -> Result<AppendPoint, JournalError> {
        let size = self.file.metadata().map_err(|e| self.io(e))?.len();
        if size == 0 {
            return Ok(AppendPoint { size, complete: 0 });
        }
        let Some(first) = first_line(&self.file, size).map_err(|e| self.io(e))? else {
            return Err(JournalError::Foreign {
                path: self.path.clone(),
                why: "it has no complete line".into(),
            });
        };
        read_header(&self.path, &first, list)?;
        let complete =
            taskproof_store::audit::complete_len(&self.file, size).map_err(|e| self.io(e))?;
        Ok(AppendPoint { size, complete })
    }

    /// Writes `lines` at `at` (the end of the last complete line of a file of `old_len`
    /// bytes), cutting what followed; refused past [`HARD_LIMIT`].
    pub(super) fn write_at(&self, at: u64, old_len: u64, lines: &[u8]) -> Result<(), JournalError> {
        within_limit(&self.path, at, lines.len())?;
        let w = |error| JournalError::Write {
            path: self.path.clone(),
            error,
        };
        self.file.write_all_at(lines, at).map_err(w)?;
        let end = at + lines.len() as u64;
        if old_len > end {
            self.file.set_len(end).map_err(w)?;
        }
        Ok(())
    }
}

/// Where lines are appended to a journal: after its last complete line.
pub(super) struct AppendPoint {
    /// The file's length.
    pub(super) size: u64,
    /// Its length up to the end of its last complete line; 0 when the file is new.
    pub(super) complete: u64,
}

impl AppendPoint {
    /// The lines to write start with the journal's first line when the file is new.
    pub(super) fn start(&self, list: &str, folder: &Path, at: u64) -> Vec<u8> {
        if self.size == 0 {
            header_line(list, folder, at)
        } else {
            Vec::new()
        }
    }
}

/// Locks the journal at `path` (creating it when absent) to append lines to it.
pub(super) fn open_for_append(
    path: &Path,
    list: &str,
) -> Result<(Locked, AppendPoint), JournalError> {
    let locked = lock(path)?;
    let point = locked.append_point(list)?;
    Ok((locked, point))
}
