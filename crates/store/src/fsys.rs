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
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags, RenameFlags};
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

/// Makes the open regular file hold exactly `bytes`: written from offset 0, then cut to
/// length only when it was longer (a content that grows is never truncated first, so a lost
/// write leaves the old content whole).
fn write_whole_at_start(fd: &OwnedFd, old_len: i64, bytes: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        match rustix::io::pwrite(fd, &bytes[done..], done as u64) {
            Ok(n) => done += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(errno_io(e)),
        }
    }
    if old_len > bytes.len() as i64 {
        rfs::ftruncate(fd, bytes.len() as u64).map_err(errno_io)?;
    }
    Ok(())
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
        let mut buf = Vec::new();
        self.read_into(name, &mut buf)?;
        Ok(buf)
    }

    /// The status of the entry `name` itself (a link is described, not followed); `None`
    /// when absent.
    pub fn stat(&self, name: &str) -> io::Result<Option<rfs::Stat>> {
        check_name(name);
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// As [`Dir::stat`], for a name the caller already holds as a C string (built on the
    /// stack), so that a caller checking thousands of files makes no allocation per file.
    pub fn stat_c(&self, name: &std::ffi::CStr) -> io::Result<Option<rfs::Stat>> {
        debug_assert!(
            std::str::from_utf8(name.to_bytes()).is_ok_and(|n| {
                check_name(n);
                true
            }),
            "name {name:?} is not UTF-8"
        );
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// The status of the folder itself, through its descriptor.
    pub fn stat_self(&self) -> io::Result<rfs::Stat> {
        rfs::fstat(&self.fd).map_err(errno_io)
    }

    /// The kind of file system the folder is on (`statfs`'s `f_type`).
    pub fn fs_type(&self) -> io::Result<u64> {
        // The field's type differs between targets.
        #[allow(clippy::unnecessary_cast)]
        rfs::fstatfs(&self.fd)
            .map(|s| s.f_type as u64)
            .map_err(errno_io)
    }

    /// Places an inotify watch (`mask`, on `inotify`) on the file `name` names now, never
    /// through a link, and returns the watch with that file's status. The file is opened
    /// with `O_PATH` (nothing is read) and watched through its descriptor's `/proc/self/fd`
    /// entry, so the watch and the status are those of one and the same inode even if the
    /// name is replaced meanwhile. `Ok(None)` when the name is gone; no watch (`None`) with
    /// the status when the kernel would not place one (its limit of watches reached, no
    /// `/proc`).
    pub fn watch_c(
        &self,
        name: &std::ffi::CStr,
        inotify: BorrowedFd<'_>,
        mask: rustix::fs::inotify::WatchFlags,
    ) -> io::Result<Option<(Option<i32>, rfs::Stat)>> {
        let fd = match rfs::openat(
            &self.fd,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(errno_io(e)),
        };
        let mut path = [0u8; 40];
        let proc_path = proc_fd_path(fd.as_raw_fd(), &mut path);
        let wd = rustix::fs::inotify::add_watch(inotify, proc_path, mask).ok();
        let st = rfs::fstat(&fd).map_err(errno_io)?;
        Ok(Some((wd, st)))
    }

    /// Reads the regular file `name` without following a link into `buf` (cleared first), so
    /// that a caller reading many files can reuse one buffer. Four system calls: open, fstat
    /// (a link, folder, FIFO or device is refused before any read), one read, close. Returns
    /// the status of the file that was read.
    pub fn read_into(&self, name: &str, buf: &mut Vec<u8>) -> Result<rfs::Stat, ReadError> {
        let (fd, st) = self.open_regular(name)?;
        buf.clear();
        // One byte more than the size, so that a file read whole leaves the buffer short:
        // for a regular file a short read means the end, and no second read is needed to
        // see it. A file that grew since the fstat fills the buffer and is read on.
        buf.reserve(st.st_size.max(0) as usize + 1);
        loop {
            match rustix::io::read(&fd, rustix::buffer::spare_capacity(buf)) {
                Ok(0) => return Ok(st),
                Ok(_) if buf.len() < buf.capacity() => return Ok(st),
                Ok(_) => buf.reserve(buf.capacity().max(4096)),
                Err(Errno::INTR) => {}
                Err(e) => return Err(ReadError::Io(errno_io(e))),
            }
        }
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
        self.write_atomic_through(name, TMP_NAME, 0o644, bytes, durable)
    }

    /// [`Dir::write_atomic`] through the temporary name `tmp`, creating files with the
    /// permissions `mode`: for a file whose writers exclude each other with a lock of their
    /// own rather than the folder's (`taskproof check`'s journals, one lock per file in a
    /// shared folder). That lock makes `tmp` its holder's alone, and a `tmp` that a killed
    /// writer left is written over and renamed away by the next.
    pub fn write_atomic_through(
        &self,
        name: &str,
        tmp: &str,
        mode: u32,
        bytes: &[u8],
        durable: bool,
    ) -> io::Result<()> {
        check_name(name);
        check_name(tmp);
        let fd = rfs::openat(
            &self.fd,
            tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map_err(errno_io)?;
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        if durable {
            file.sync_data()?;
        }
        drop(file);
        rfs::renameat(&self.fd, tmp, &self.fd, name).map_err(errno_io)?;
        if durable {
            self.sync()?;
        }
        Ok(())
    }

    /// Writes `name` whole by filling the store's own file `scratch` in place and exchanging
    /// the two names in one `renameat2(RENAME_EXCHANGE)`: a reader sees the old content or the
    /// new, as with [`Dir::write_atomic`], but no inode is created or freed, which on ext4 is
    /// most of the cost of a small write (allocating an inode scans for recently deleted ones),
    /// and no block is newly allocated, which a durable write's journal commit would have to
    /// flush as well. After the exchange `scratch` holds the old content, and it is only ever
    /// rewritten in place before its next exchange. A `scratch` that is a link or not a
    /// regular file is removed (never followed) and made afresh. The caller holds the lock.
    ///
    /// Nothing is synced: after a power cut either name may hold a content older than its
    /// last write (the in-place write lost while the exchange reached the journal). Callers
    /// that need a value to survive make both files durable first
    /// ([`Dir::write_scratch_durably`] and [`Dir::sync_file`]); writes only ever grow the
    /// content, so a lost write leaves the older, shorter content, never a mixture.
    pub fn write_exchange(&self, name: &str, scratch: &str, bytes: &[u8]) -> io::Result<()> {
        check_name(name);
        let Some((fd, old_len)) = self.open_scratch(scratch)? else {
            return self.write_atomic(name, bytes, false);
        };
        write_whole_at_start(&fd, old_len, bytes)?;
        drop(fd);
        match rfs::renameat_with(&self.fd, scratch, &self.fd, name, RenameFlags::EXCHANGE) {
            Ok(()) => Ok(()),
            // Nothing to exchange with: the scratch becomes the file.
            Err(Errno::NOENT) => rfs::renameat(&self.fd, scratch, &self.fd, name).map_err(errno_io),
            // A file system without exchange: the ordinary whole-file write.
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                self.write_atomic(name, bytes, false)
            }
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Writes the store's own file `scratch` in place, creating it, and flushes its data
    /// (`fdatasync`); a `scratch` that is a link or not a regular file is removed (never
    /// followed) and made afresh. A newly made file's name is durable with the next folder
    /// sync. The caller holds the lock.
    pub fn write_scratch_durably(&self, scratch: &str, bytes: &[u8]) -> io::Result<()> {
        let (fd, old_len) = match self.open_scratch(scratch)? {
            Some(opened) => opened,
            None => self.open_scratch(scratch)?.ok_or_else(|| {
                io::Error::other(format!("{scratch}: cannot be made a regular file"))
            })?,
        };
        write_whole_at_start(&fd, old_len, bytes)?;
        rfs::fdatasync(&fd).map_err(errno_io)
    }

    /// Opens (creating) the store's own file `scratch` to write in place, never through a
    /// link, with its length. `None` when something that is not a regular file sat there:
    /// it is removed then (a link itself, never its target).
    fn open_scratch(&self, scratch: &str) -> io::Result<Option<(OwnedFd, i64)>> {
        check_name(scratch);
        let opened = rfs::openat(
            &self.fd,
            scratch,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        );
        let fd = match opened {
            Ok(fd) => Some(fd),
            Err(Errno::LOOP | Errno::ISDIR | Errno::NXIO) => None,
            Err(e) => return Err(errno_io(e)),
        };
        if let Some(fd) = fd {
            let st = rfs::fstat(&fd).map_err(errno_io)?;
            if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile {
                return Ok(Some((fd, st.st_size)));
            }
        }
        match rfs::unlinkat(&self.fd, scratch, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT | Errno::ISDIR) => Ok(None),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Flushes the data of the regular file `name` to disk (`fdatasync`), never through a
    /// link. `Ok(false)` when there is no such regular file.
    pub fn sync_file(&self, name: &str) -> io::Result<bool> {
        match self.open_regular(name) {
            Ok((fd, _)) => {
                rfs::fdatasync(&fd).map_err(errno_io)?;
                Ok(true)
            }
            Err(ReadError::Io(e)) => Err(e),
            Err(_) => Ok(false),
        }
    }

    /// Opens the regular file `name` to read, never through a link, with its status. A
    /// link, folder, FIFO or device is refused by the fstat, before anything is read
    /// (`NONBLOCK`: opening a FIFO does not wait for a writer).
    fn open_regular(&self, name: &str) -> Result<(OwnedFd, rfs::Stat), ReadError> {
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
            FileType::RegularFile => Ok((fd, st)),
            FileType::Directory => Err(ReadError::Folder),
            _ => Err(ReadError::Special),
        }
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
        let mut out = Vec::new();
        // On Linux the names are read with one large buffer: rustix's `Dir` starts with
        // room for a few dozen names and grows slowly, and on ext4 each `getdents` call on a
        // hashed folder rebuilds part of its hash order, so a list of 10,000 tasks spent a
        // fifth of its time in some hundred small calls.
        #[cfg(target_os = "linux")]
        {
            let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 256 * 1024];
            let mut dir = rfs::RawDir::new(&fd, &mut buf);
            while let Some(entry) = dir.next() {
                let entry = entry.map_err(errno_io)?;
                push_entry(&mut out, entry.file_name().to_bytes(), entry.file_type());
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let mut dir = rfs::Dir::read_from(&fd).map_err(errno_io)?;
            while let Some(entry) = dir.read() {
                let entry = entry.map_err(errno_io)?;
                push_entry(&mut out, entry.file_name().to_bytes(), entry.file_type());
            }
        }
        Ok(out)
    }

    /// Takes the exclusive lock on `name` (created when absent, never through a link),
    /// blocking until it is free. The lock is an flock on its own open file description, so
    /// it excludes other processes and other opens in this process alike.
    ///
    /// The folder itself is locked too, after `name`, on an open description of its own: a
    /// program that deletes `name` while it is held (oh-my-opencode takes an empty `.lock`
    /// for a stale lock of its own and deletes it; issue 48) would otherwise let the next
    /// locker create a new `name` and lock that, beside the holder of the deleted one. Nobody
    /// deletes a folder that holds files, so the second lock holds whatever happens to `name`;
    /// the first stays for every other program that locks `name`.
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
        let folder = rfs::openat(
            &self.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno_io)?;
        rfs::flock(&folder, FlockOperation::LockExclusive).map_err(errno_io)?;
        Ok(LockGuard {
            _fd: fd,
            _folder: folder,
        })
    }

    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Holds the flocks of [`Dir::lock`] until dropped (closing the descriptors releases them,
/// also on SIGKILL).
#[derive(Debug)]
pub struct LockGuard {
    _fd: OwnedFd,
    _folder: OwnedFd,
}

/// Adds one folder entry to `out`: `.` and `..` left out, the type `None` when the folder
/// does not say.
fn push_entry(out: &mut Vec<(String, Option<FileType>)>, bytes: &[u8], ft: FileType) {
    if bytes == b"." || bytes == b".." {
        return;
    }
    let name = match String::from_utf8(bytes.to_vec()) {
        Ok(s) => s,
        // A name that is not UTF-8 is never a task file; keep it visible as lossy text.
        Err(e) => OsString::from_vec(e.into_bytes())
            .to_string_lossy()
            .into_owned(),
    };
    out.push((name, (ft != FileType::Unknown).then_some(ft)));
}

/// `/proc/self/fd/{fd}` as a C string written into `buf`.
fn proc_fd_path(fd: i32, buf: &mut [u8; 40]) -> &std::ffi::CStr {
    let mut w = &mut buf[..];
    write!(w, "/proc/self/fd/{fd}\0").expect("fits in 40 bytes");
    let len = 40 - w.len();
    std::ffi::CStr::from_bytes_with_nul(&buf[..len]).expect("one NUL, at the end")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file `name` holding `bytes` beside an empty folder `root`, both in `tmp`: the
    /// outside a link inside the root must never reach.
    fn outside_and_root(tmp: &tempfile::TempDir, name: &str, bytes: &[u8]) -> (PathBuf, PathBuf) {
        let outside = tmp.path().join(name);
        std::fs::write(&outside, bytes).unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        (outside, root)
    }

    #[test]
    fn reads_refuse_links_and_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let (outside, root) = outside_and_root(&tmp, "outside.json", b"{}");
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
        let (outside, root) = outside_and_root(&tmp, "outside.json", b"keep");
        std::os::unix::fs::symlink(&outside, root.join("1.json")).unwrap();
        let dir = Dir::open_root(&root).unwrap();
        dir.write_atomic("1.json", b"new", true).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert_eq!(std::fs::read(root.join("1.json")).unwrap(), b"new");
        assert!(dir.entry_type(TMP_NAME).unwrap().is_none());
    }

    #[test]
    fn exchange_writes_replace_the_file_whole_and_never_follow_a_linked_scratch() {
        let tmp = tempfile::tempdir().unwrap();
        let (outside, root) = outside_and_root(&tmp, "outside", b"keep");
        let dir = Dir::open_root(&root).unwrap();
        // No file yet: the scratch becomes it.
        dir.write_exchange("f", "s", b"1\n").unwrap();
        assert_eq!(std::fs::read(root.join("f")).unwrap(), b"1\n");
        dir.write_exchange("f", "s", b"22\n").unwrap();
        assert_eq!(std::fs::read(root.join("f")).unwrap(), b"22\n");
        assert_eq!(std::fs::read(root.join("s")).unwrap(), b"1\n");
        // A shorter content after a longer one leaves no tail.
        dir.write_exchange("f", "s", b"3\n").unwrap();
        assert_eq!(std::fs::read(root.join("f")).unwrap(), b"3\n");
        // A scratch that is a link is removed, not written through.
        writes_past_a_link(&root, &outside, "s", "f", b"4\n", || {
            dir.write_exchange("f", "s", b"4\n").unwrap()
        });
        // A target that is a link is exchanged away as a link; its target is untouched.
        writes_past_a_link(&root, &outside, "f", "f", b"5\n", || {
            dir.write_exchange("f", "s", b"5\n").unwrap()
        });
    }

    /// Puts a link to `outside` at `linked`, runs `write`, and checks that `outside` kept its
    /// content, that `written` holds `bytes`, and that `linked` is no longer a link (a
    /// regular file, or gone).
    fn writes_past_a_link(
        root: &Path,
        outside: &Path,
        linked: &str,
        written: &str,
        bytes: &[u8],
        write: impl FnOnce(),
    ) {
        let _ = std::fs::remove_file(root.join(linked));
        std::os::unix::fs::symlink(outside, root.join(linked)).unwrap();
        write();
        assert_eq!(std::fs::read(outside).unwrap(), b"keep");
        assert_eq!(std::fs::read(root.join(written)).unwrap(), bytes);
        assert!(
            std::fs::symlink_metadata(root.join(linked)).map_or(true, |m| !m.is_symlink()),
            "{linked} is still a link"
        );
    }

    #[test]
    fn durable_scratch_writes_go_in_place_and_never_follow_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let (outside, root) = outside_and_root(&tmp, "outside", b"keep");
        let dir = Dir::open_root(&root).unwrap();
        dir.write_scratch_durably("s", b"22\n").unwrap();
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let first = inode(&root.join("s"));
        // Rewritten in place (the same inode), a shorter content leaving no tail.
        dir.write_scratch_durably("s", b"3\n").unwrap();
        assert_eq!(std::fs::read(root.join("s")).unwrap(), b"3\n");
        assert_eq!(inode(&root.join("s")), first);
        writes_past_a_link(&root, &outside, "s", "s", b"4\n", || {
            dir.write_scratch_durably("s", b"4\n").unwrap()
        });
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

    #[test]
    fn a_lock_holds_when_another_program_deletes_the_lock_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        let held = dir.lock(LOCK_NAME).unwrap();
        // Another program deletes `.lock` as stale (oh-my-opencode does so to Claude Code's).
        std::fs::remove_file(tmp.path().join(LOCK_NAME)).unwrap();
        let path = tmp.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        let second = std::thread::spawn(move || {
            let other = Dir::open_root(&path).unwrap();
            let guard = other.lock(LOCK_NAME).unwrap();
            tx.send(()).unwrap();
            drop(guard);
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "a second locker took the lock while the first still held it"
        );
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the lock was free once its holder let go");
        second.join().unwrap();
    }
}
