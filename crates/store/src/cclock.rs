//! Claude Code's own lock protocol, honoured by the strict store when it shares a list with
//! Claude Code (`taskproof mcp` turns it on).
//!
//! Facts read from Claude Code 2.1.112's `cli.js` (its bundled copy of the npm package
//! proper-lockfile): a file `X` is locked by creating the directory `X.lock` beside it
//! (`mkdir`, which fails when it exists), released by removing that directory, and a lock whose
//! directory was last modified more than 10 s ago is stale and may be taken over. Claude Code
//! retries a held lock 30 times, 5 to 100 ms apart, then gives up ("Lock file is already being
//! held", about 3.5 s here). TaskCreate locks the list's `.lock` (so `.lock.lock`) around
//! reading the highest id and writing the new task; claiming a task, and the reference
//! clean-up of a delete, lock the task's own file (`{id}.json.lock`).
//!
//! The store takes these locks inside its own flock, only for the moment of writing (so a
//! waiting Claude Code does not give up): `.lock.lock` for every change (so that no Claude Code
//! create picks an id or writes a file in the middle of it), then `{id}.json.lock` for each
//! task file it writes, in name order. Claude Code never holds more than one of them at a time,
//! so the order cannot deadlock. What Claude Code writes without any lock (TaskUpdate's plain
//! read-modify-write) no lock can protect; that loss is Claude Code's own.

use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::{AtFlags, Mode};
use rustix::io::Errno;

use crate::fsys::{Dir, LOCK_NAME};

/// A lock directory older than this is stale (proper-lockfile's default).
pub const STALE: Duration = Duration::from_secs(10);
/// How long the store waits for a lock Claude Code holds: past [`STALE`], so that a lock left
/// by a killed Claude Code is taken over rather than failing the change.
pub const PATIENCE: Duration = Duration::from_secs(12);

/// A held lock directory, removed when dropped.
pub struct CcLock {
    /// The folder it is in (its own descriptor, so the lock can outlive a borrow).
    dir: OwnedFd,
    name: String,
}

impl Drop for CcLock {
    fn drop(&mut self) {
        let _ = rustix::fs::unlinkat(&self.dir, self.name.as_str(), AtFlags::REMOVEDIR);
    }
}

/// The name of the lock directory of `target`.
pub fn lock_name(target: &str) -> String {
    format!("{target}.lock")
}

/// Takes Claude Code's lock on `target` in `dir`, waiting at most `patience`.
pub fn lock(dir: &Dir, target: &str, patience: Duration) -> io::Result<CcLock> {
    let name = lock_name(target);
    let start = Instant::now();
    let mut wait = Duration::from_millis(5);
    loop {
        match rustix::fs::mkdirat(dir.as_fd(), name.as_str(), Mode::from_raw_mode(0o777)) {
            Ok(()) => {
                let lock = rustix::io::dup(dir.as_fd()).map(|fd| CcLock {
                    dir: fd,
                    name: name.clone(),
                });
                return lock.map_err(|e| {
                    // Not held after all: release the directory just made.
                    let _ = rustix::fs::unlinkat(dir.as_fd(), name.as_str(), AtFlags::REMOVEDIR);
                    io::Error::other(format!("cannot keep Claude Code's lock: {e}"))
                });
            }
            Err(Errno::EXIST) => {}
            Err(e) => {
                return Err(io::Error::other(format!(
                    "{}: cannot take Claude Code's lock: {e}",
                    dir.path().join(&name).display()
                )));
            }
        }
        if is_stale(dir, &name)? {
            // Left by a process that died: take it over, as proper-lockfile does.
            match rustix::fs::unlinkat(dir.as_fd(), name.as_str(), AtFlags::REMOVEDIR) {
                Ok(()) | Err(Errno::NOENT) => continue,
                Err(e) => {
                    return Err(io::Error::other(format!(
                        "{}: a stale lock that cannot be removed: {e}",
                        dir.path().join(&name).display()
                    )));
                }
            }
        }
        if start.elapsed() >= patience {
            return Err(io::Error::other(format!(
                "{}: Claude Code's lock is held and not stale after {:.1} s; nothing was changed",
                dir.path().join(&name).display(),
                patience.as_secs_f64()
            )));
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_millis(100));
    }
}

fn is_stale(dir: &Dir, name: &str) -> io::Result<bool> {
    let Some(st) = dir.stat(name)? else {
        return Ok(false); // released meanwhile
    };
    let mtime =
        SystemTime::UNIX_EPOCH + Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec as u32);
    Ok(SystemTime::now()
        .duration_since(mtime)
        .is_ok_and(|age| age > STALE))
}

/// Claude Code's lock on the list (`.lock.lock`).
pub fn lock_list(dir: &Dir) -> io::Result<CcLock> {
    lock(dir, LOCK_NAME, PATIENCE)
}

/// The locks a change to the files `names` takes: the list's (unless `list` already holds
/// it), then each task file's.
pub fn lock_change<'n>(
    dir: &Dir,
    list: Option<CcLock>,
    names: impl IntoIterator<Item = &'n str>,
) -> io::Result<Vec<CcLock>> {
    let mut tasks: Vec<&str> = names.into_iter().filter(|n| n.ends_with(".json")).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let mut held = Vec::with_capacity(tasks.len() + 1);
    held.push(match list {
        Some(l) => l,
        None => lock_list(dir)?,
    });
    for t in tasks {
        held.push(lock(dir, t, PATIENCE)?);
    }
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_lock_is_taken_over_and_a_fresh_one_waited_for() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        let held = lock(&dir, "1.json", PATIENCE).unwrap();
        assert!(tmp.path().join("1.json.lock").is_dir());
        let e = lock(&dir, "1.json", Duration::from_millis(50))
            .err()
            .expect("a held lock is not taken");
        assert!(e.to_string().contains("held and not stale"), "{e}");
        drop(held);
        assert!(!tmp.path().join("1.json.lock").exists());
        // Left by a dead process 20 s ago.
        std::fs::create_dir(tmp.path().join(".lock.lock")).unwrap();
        let old = rustix::fs::Timestamps {
            last_access: rustix::fs::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            last_modification: rustix::fs::Timespec {
                tv_sec: (SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_secs()
                    - 20) as _,
                tv_nsec: 0,
            },
        };
        rustix::fs::utimensat(dir.as_fd(), ".lock.lock", &old, AtFlags::empty()).unwrap();
        let locks = lock_change(&dir, None, ["2.json", ".highwatermark", "1.json"]).unwrap();
        assert_eq!(locks.len(), 3);
        drop(locks);
        assert!(!tmp.path().join(".lock.lock").exists());
    }
}
