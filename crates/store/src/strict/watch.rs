//! What lets a warm `list` answer from its cache without a `stat` per file: an inotify watch
//! on each cached file's inode, placed before the file's identity was last confirmed.
//!
//! The kernel queues an event on a watched inode for every change made to it through the
//! file API, whatever name or descriptor it is made through: a write or truncation in place
//! (`IN_MODIFY`), a close after writing (`IN_CLOSE_WRITE`), a change of its status or link
//! count (`IN_ATTRIB`: `chmod`, `touch`, a new hard link, an unlink or a rename over it), its
//! removal (`IN_DELETE_SELF`) or a rename of it (`IN_MOVE_SELF`); and `IN_Q_OVERFLOW` when
//! events were lost. So a cached task whose watch has no event pending is the file as it was
//! when its identity was confirmed *after* the watch was in place, and needs no `stat`.
//!
//! What a watch cannot see, and what is therefore still checked by `stat` every time:
//! - files on a file system that is not known to be local (another machine's writes to a
//!   network file system raise no event here): the watcher is only used on the kinds in
//!   [`LOCAL_FILE_SYSTEMS`];
//! - files with more than one link, or on another device than their folder (a mount point):
//!   they are never watched;
//! - every cached file after an overflow of the queue, and each file with an event pending.
//!
//! Writes through a shared memory mapping raise no event; they are not covered by the `stat`
//! check either (a mapped write moves the change time only at its first fault after
//! writeback), and are not a way task files are written.

use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::inotify::{self, ReadFlags, WatchFlags};
use rustix::io::Errno;

use taskproof_core::task::TaskId;

/// `statfs` types of local file systems, whose every change goes through this kernel:
/// ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS.
pub(super) const LOCAL_FILE_SYSTEMS: [u64; 6] = [
    0xEF53,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0xF2F5_2010,
    0x2FC1_2FC1,
];

/// The events that mean a watched file may have changed.
pub(super) fn mask() -> WatchFlags {
    WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
}

/// One inotify instance for one list's cache, and which task each watch is for.
pub(super) struct Watcher {
    fd: OwnedFd,
    by_wd: HashMap<i32, TaskId>,
}

/// What happened to the watched files since the last [`Watcher::drain`].
#[derive(Default)]
pub(super) struct Drained {
    /// Events were lost: no watch proves anything this time.
    pub(super) overflow: bool,
    /// Tasks whose file had an event.
    pub(super) changed: HashSet<TaskId>,
}

impl Watcher {
    /// A new inotify instance; `None` when the kernel refuses one (too many instances).
    pub(super) fn new() -> Option<Watcher> {
        let fd =
            inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).ok()?;
        Some(Watcher {
            fd,
            by_wd: HashMap::new(),
        })
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Whether `wd` is the live watch of task `id`.
    pub(super) fn watches(&self, wd: i32, id: TaskId) -> bool {
        self.by_wd.get(&wd) == Some(&id)
    }

    /// Records that `wd` watches the file of task `id`.
    pub(super) fn register(&mut self, wd: i32, id: TaskId) {
        self.by_wd.insert(wd, id);
    }

    /// Drops the watch `wd` of task `id` (its entry was replaced or removed).
    pub(super) fn forget(&mut self, wd: i32, id: TaskId) {
        if self.by_wd.get(&wd) == Some(&id) {
            self.by_wd.remove(&wd);
            // Already gone when the inode was freed; nothing to do about an error.
            let _ = inotify::remove_watch(&self.fd, wd);
        }
    }

    /// Reads every queued event.
    pub(super) fn drain(&mut self) -> Drained {
        let mut out = Drained::default();
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        loop {
            match reader.next() {
                Ok(event) => {
                    let flags = event.events();
                    if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                        out.overflow = true;
                    }
                    let wd = event.wd();
                    if let Some(&id) = self.by_wd.get(&wd) {
                        out.changed.insert(id);
                        if flags.contains(ReadFlags::IGNORED) {
                            // The watch is gone (its inode was freed).
                            self.by_wd.remove(&wd);
                        }
                    }
                }
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => {}
                // Anything else: trust no watch this time.
                Err(_) => {
                    out.overflow = true;
                    break;
                }
            }
        }
        out
    }
}
