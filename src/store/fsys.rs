//! Symlink-safe file access relative to an open directory.
//!
//! Every path the store touches is one name inside a directory it holds open: the root, then
//! a list folder opened with `O_NOFOLLOW | O_DIRECTORY`, then files opened with `O_NOFOLLOW`.
//! Nothing is ever resolved through a symbolic link inside the root (S17), and because list
//! names and ids are validated before they get here, no name can contain `/` or `..` (S13).
//! Holding the folder's descriptor also means a folder swapped for a link after it was opened
//! cannot redirect a write.
//!
//! Whole-file writes (S18) go through one fixed temporary name per folder, [`TMP_NAME`]. That
//! is safe because every write of the strict store happens under the folder's lock, and it
//! makes clean-up O(1): a process killed mid-write leaves at most that one file, which the next
//! lock holder removes before doing anything else ([`Dir::remove_stale_tmp`]).

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

/// The one temporary name of a folder, written under the lock and renamed into place.
pub const TMP_NAME: &str = ".tmp";
/// The lock file of a list folder.
pub const LOCK_NAME: &str = ".lock";

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("no such file")]
    Missing,
    #[error("is a symbolic link")]
    Symlink,
    #[error("is a folder")]
    Folder,
    #[error("is not a regular file")]
    Special,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A directory held open; every operation names one entry inside it.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn errno_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

fn check_name(name: &str) {
    // Names come from validated list names, ids and fixed constants; anything else is a bug.
    debug_assert!(
        !name.is_empty() && !name.contains('/') && name != "." && name != "..",
        "unsafe name {name:?}"
    );
}

impl Dir {
    /// Opens the root folder (following links in the root's own path, which the user chose).
    pub fn open_root(path: &Path) -> io::Result<Dir> {
        let fd = rfs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io::Error::new(errno_io(e).kind(), format!("{}: {e}", path.display())))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the sub-folder `name` without following a link. `Ok(None)` when it does not
    /// exist; [`ReadError::Symlink`] or [`ReadError::Special`] when it is a link or not a folder.
    pub fn open_dir(&self, name: &str) -> Result<Option<Dir>, ReadError> {
        check_name(name);
        match rfs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => Ok(Some(Dir {
                fd,
                path: self.path.join(name),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::LOOP) => Err(ReadError::Symlink),
            Err(Errno::NOTDIR) => Err(ReadError::Special),
            Err(e) => Err(ReadError::Io(errno_io(e))),
        }
    }

    /// Opens the sub-folder `name`, creating it when it does not exist.
    pub fn create_dir(&self, name: &str) -> Result<Dir, ReadError> {
        check_name(name);
        match rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(ReadError::Io(errno_io(e))),
        }
        self.open_dir(name)?.ok_or(ReadError::Missing)
    }

    /// Writes `name` whole through a temporary name of its own (`.tmp.{pid}.{n}`), for
    /// writers that do not hold the folder's lock and so cannot share [`TMP_NAME`].
    pub fn write_atomic_unlocked(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = format!(
            ".tmp.{}.{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let fd = rfs::openat(
            &self.fd,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(errno_io)?;
        std::fs::File::from(fd).write_all(bytes)?;
        rfs::renameat(&self.fd, tmp.as_str(), &self.fd, name).map_err(errno_io)
    }

    /// Reads the regular file `name` without following a link.
    pub fn read(&self, name: &str) -> Result<Vec<u8>, ReadError> {
        check_name(name);
        let fd = match rfs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Err(ReadError::Missing),
            Err(Errno::LOOP) => return Err(ReadError::Symlink),
            Err(e) => return Err(ReadError::Io(errno_io(e))),
        };
        let st = rfs::fstat(&fd).map_err(errno_io)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err(ReadError::Folder),
            _ => return Err(ReadError::Special),
        }
        let mut file = std::fs::File::from(fd);
        let mut buf = Vec::with_capacity(st.st_size.max(0) as usize);
        file.read_to_end(&mut buf)?;
        Ok(buf)
    }

    /// What kind of entry `name` is, without following a link; `None` when absent.
    pub fn entry_type(&self, name: &str) -> io::Result<Option<FileType>> {
        check_name(name);
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Writes `name` whole: the bytes go to [`TMP_NAME`], which is renamed over `name`. A reader
    /// sees the old file or the new one, never part of one (S18). With `durable`, the data is
    /// fsynced before the rename and the folder after it, so the rename survives a power cut
    /// too; without it the write still survives SIGKILL, since the page cache outlives the
    /// process. The caller holds the folder's lock.
    pub fn write_atomic(&self, name: &str, bytes: &[u8], durable: bool) -> io::Result<()> {
        check_name(name);
        let fd = rfs::openat(
            &self.fd,
            TMP_NAME,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(errno_io)?;
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        if durable {
            file.sync_data()?;
        }
        drop(file);
        rfs::renameat(&self.fd, TMP_NAME, &self.fd, name).map_err(errno_io)?;
        if durable {
            self.sync()?;
        }
        Ok(())
    }

    /// Writes `name` the unsafe way: truncate, then write, following links. Only the naive
    /// store and the mutants that reproduce its bugs use this.
    pub fn write_in_place(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut f = std::fs::File::create(self.path.join(name))?;
        f.write_all(bytes)
    }

    /// Removes the entry `name` (a link itself, never its target). `Ok(false)` when absent.
    pub fn remove(&self, name: &str) -> io::Result<bool> {
        check_name(name);
        match rfs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Removes a temporary file left by a writer that was killed mid-write. Call with the
    /// lock held: then no live writer can own it.
    pub fn remove_stale_tmp(&self) -> io::Result<()> {
        self.remove(TMP_NAME).map(|_| ())
    }

    /// Flushes the folder's entries (renames, unlinks) to disk.
    pub fn sync(&self) -> io::Result<()> {
        rfs::fsync(&self.fd).map_err(errno_io)
    }

    /// The names in the folder, `.` and `..` left out, with their types as the folder
    /// reports them (`None` when it does not say).
    pub fn entries(&self) -> io::Result<Vec<(String, Option<FileType>)>> {
        let fd = rfs::openat(
            &self.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno_io)?;
        let mut dir = rfs::Dir::read_from(&fd).map_err(errno_io)?;
        let mut out = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(errno_io)?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let name = match String::from_utf8(bytes.to_vec()) {
                Ok(s) => s,
                // A name that is not UTF-8 is never a task file; keep it visible as lossy text.
                Err(e) => OsString::from_vec(e.into_bytes())
                    .to_string_lossy()
                    .into_owned(),
            };
            let ft = entry.file_type();
            let ft = if ft == FileType::Unknown {
                None
            } else {
                Some(ft)
            };
            out.push((name, ft));
        }
        Ok(out)
    }

    /// Takes the exclusive lock on `name` (created when absent, never through a link),
    /// blocking until it is free. The lock is an flock on its own open file description, so
    /// it excludes other processes and other opens in this process alike.
    pub fn lock(&self, name: &str) -> io::Result<LockGuard> {
        check_name(name);
        let fd = rfs::openat(
            &self.fd,
            name,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| match e {
            Errno::LOOP => io::Error::other(format!(
                "{}: the lock file is a symbolic link",
                self.path.join(name).display()
            )),
            e => errno_io(e),
        })?;
        rfs::flock(&fd, FlockOperation::LockExclusive).map_err(errno_io)?;
        Ok(LockGuard { _fd: fd })
    }

    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Holds an flock until dropped (closing the descriptor releases it, also on SIGKILL).
#[derive(Debug)]
pub struct LockGuard {
    _fd: OwnedFd,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_refuse_links_and_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.json");
        std::fs::write(&outside, b"{}").unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("1.json")).unwrap();
        std::fs::create_dir(root.join("2.json")).unwrap();
        let dir = Dir::open_root(&root).unwrap();
        assert!(matches!(dir.read("1.json"), Err(ReadError::Symlink)));
        assert!(matches!(dir.read("2.json"), Err(ReadError::Folder)));
        assert!(matches!(dir.read("3.json"), Err(ReadError::Missing)));
    }

    #[test]
    fn atomic_write_replaces_a_link_without_touching_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.json");
        std::fs::write(&outside, b"keep").unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("1.json")).unwrap();
        let dir = Dir::open_root(&root).unwrap();
        dir.write_atomic("1.json", b"new", true).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert_eq!(std::fs::read(root.join("1.json")).unwrap(), b"new");
        assert!(dir.entry_type(TMP_NAME).unwrap().is_none());
    }

    #[test]
    fn linked_list_folders_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(tmp.path(), root.join("l")).unwrap();
        let dir = Dir::open_root(&root).unwrap();
        assert!(dir.open_dir("l").is_err());
        assert!(dir.create_dir("l").is_err());
        assert!(dir.open_dir("missing").unwrap().is_none());
    }

    #[test]
    fn locks_exclude_each_other_within_one_process() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        let held = dir.lock(LOCK_NAME).unwrap();
        let fd = rfs::openat(dir.as_fd(), LOCK_NAME, OFlags::RDWR, Mode::empty()).unwrap();
        assert_eq!(
            rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive),
            Err(Errno::WOULDBLOCK)
        );
        drop(held);
        rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive).unwrap();
    }
}
