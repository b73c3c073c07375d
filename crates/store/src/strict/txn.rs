//! One operation of the strict store on one list, under the list's lock (see the parent
//! module): the per-operation read cache and write overlay, the graph walks an edge change
//! needs, id assignment, and the commit that writes every changed file at once. Also what
//! `list` keeps between calls (file identities and the decoded tasks).

use super::*;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, OnceLock};

/// What a read of one task found.
// Slots live in a per-operation cache of a handful of tasks; boxing would only add
// allocations.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub(super) enum Slot {
    Task(Task),
    Missing,
    Corrupt(String),
}

/// One operation on one list, under its lock: reads go through a cache, changes into an
/// overlay, and nothing reaches the disk until [`Txn::commit`].
pub(super) struct Txn<'a> {
    pub(super) store: &'a StrictStore,
    pub(super) dir: Dir,
    pub(super) list: String,
    /// Held for the whole operation; `None` only in the `no-lock` mutant and in the
    /// `delete-without-lock` mutant's deletes.
    pub(super) lock: Option<LockGuard>,
    pub(super) cache: HashMap<TaskId, Slot>,
    /// Tasks written (`Some`) or removed (`None`) by this operation.
    pub(super) overlay: BTreeMap<TaskId, Option<Task>>,
    /// Claude Code's list lock, when a create holds it from choosing the id on.
    pub(super) cc_list: Option<crate::cclock::CcLock>,
}

impl Txn<'_> {
    pub(super) fn file_name(id: TaskId) -> String {
        LAYOUT.file_name(id).expect("file layout")
    }

    pub(super) fn read_disk(&self, id: TaskId) -> OpResult<Slot> {
        self.read_disk_into(id, &mut Vec::new())
    }

    /// Reads and decodes the task file of `id`, using `buf` for the bytes.
    pub(super) fn read_disk_into(&self, id: TaskId, buf: &mut Vec<u8>) -> OpResult<Slot> {
        self.read_disk_stat(id, buf).map(|(slot, _)| slot)
    }

    /// As [`Txn::read_disk_into`], with the status of the regular file that was read.
    pub(super) fn read_disk_stat(
        &self,
        id: TaskId,
        buf: &mut Vec<u8>,
    ) -> OpResult<(Slot, Option<rustix::fs::Stat>)> {
        let name = Self::file_name(id);
        let read = if self.store.broken(Mutant::FollowsSymlinks) {
            match std::fs::read(self.dir.path().join(&name)) {
                Ok(b) => {
                    *buf = b;
                    Ok(None)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => Err(ReadError::Missing),
                Err(e) if e.kind() == io::ErrorKind::IsADirectory => Err(ReadError::Folder),
                Err(e) => Err(ReadError::Io(e)),
            }
        } else {
            self.dir.read_into(&name, buf).map(Some)
        };
        let stat = match read {
            Ok(st) => st,
            Err(ReadError::Missing) | Err(ReadError::Folder) => return Ok((Slot::Missing, None)),
            Err(e @ (ReadError::Symlink | ReadError::Special)) => {
                return Ok((Slot::Corrupt(format!("{name} {e}")), None));
            }
            Err(ReadError::Io(e)) => return Err(io_failure(format!("{name}: {e}"))),
        };
        Ok((self.decode(id, &name, buf), stat))
    }

    pub(super) fn decode(&self, id: TaskId, name: &str, bytes: &[u8]) -> Slot {
        decode_task(id, name, bytes, self.store.strictness())
    }

    /// Reads task `id` for `list`: from `cached` when the file is still the one it was
    /// decoded from, otherwise from disk, returning a new cache entry when the file has
    /// settled. A cached entry whose watch has no event pending (`trusted`) is taken as it
    /// is (see `watch.rs`); otherwise the file's identity (inode, size, change time) is
    /// checked by one `fstatat`, never through a link, or, when `watcher` is given and the
    /// entry has no watch yet, by placing one first and checking the watched inode.
    pub(super) fn read_listed(
        &self,
        id: TaskId,
        buf: &mut Vec<u8>,
        cached: Option<&CachedTask>,
        check: Check<'_>,
        settled: (i64, i64),
    ) -> OpResult<Listed> {
        if let Some(c) = cached {
            let mut name = [0; TASK_CNAME_LEN];
            let cname = task_cname(id, &mut name);
            let fail = |e: io::Error| io_failure(format!("{}: {e}", Self::file_name(id)));
            match check {
                Check::Trusted => return Ok(Listed::Hit(c.task.clone(), WatchUpdate::Keep)),
                Check::Watch(inotify, folder_dev) => {
                    match self.dir.watch_c(cname, inotify, super::watch::mask()) {
                        Ok(Some((wd, st))) if c.identity == FileIdentity::of(&st) => {
                            // A file with another name elsewhere, or on another device than
                            // its folder, is left to the `stat` check.
                            #[allow(clippy::unnecessary_cast)]
                            let watchable =
                                st.st_nlink as u64 == 1 && st.st_dev as u64 == folder_dev;
                            let update = match wd {
                                Some(wd) if watchable => WatchUpdate::Set(wd),
                                Some(wd) => {
                                    // Removing a watch only ever makes `list` check more.
                                    let _ = rustix::fs::inotify::remove_watch(inotify, wd);
                                    WatchUpdate::Clear
                                }
                                // No watch could be placed: checked as by `stat` this time.
                                None => WatchUpdate::Clear,
                            };
                            return Ok(Listed::Hit(c.task.clone(), update));
                        }
                        // Another file now (read below; watched from the next list on), or
                        // gone. The watch placed on it is left to `Watcher::forget`.
                        Ok(_) => {}
                        Err(e) => return Err(fail(e)),
                    }
                }
                Check::Stat => match self.dir.stat_c(cname) {
                    Ok(Some(st)) if c.identity == FileIdentity::of(&st) => {
                        return Ok(Listed::Hit(c.task.clone(), WatchUpdate::Keep));
                    }
                    Ok(_) => {}
                    Err(e) => return Err(fail(e)),
                },
            }
        }
        let (slot, stat) = self.read_disk_stat(id, buf)?;
        Ok(match (slot, stat) {
            (Slot::Task(t), Some(st)) => {
                let identity = FileIdentity::of(&st);
                Listed::Read(
                    SharedTask::new(t),
                    (identity.ctime < settled).then(|| (identity, Arc::from(&buf[..]))),
                )
            }
            (Slot::Task(t), None) => Listed::Read(SharedTask::new(t), None),
            (Slot::Missing, _) => Listed::Missing,
            (Slot::Corrupt(_), _) => Listed::Corrupt,
        })
    }
}

/// Decodes the bytes of task file `name`, which should hold task `id`.
fn decode_task(id: TaskId, name: &str, bytes: &[u8], strictness: Strictness) -> Slot {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return Slot::Corrupt(format!("{name} is not valid JSON: {e}")),
    };
    match Task::from_json(&value, strictness) {
        Ok(t) if t.id == id => Slot::Task(t),
        Ok(t) => Slot::Corrupt(format!(
            "{name} holds id {:?}, which does not match its name",
            t.id.to_string()
        )),
        Err(e) => Slot::Corrupt(format!("{name}: {e}")),
    }
}

/// How `list` may confirm one cached file (see [`Txn::read_listed`]).
#[derive(Clone, Copy)]
pub(super) enum Check<'a> {
    /// Its watch had no event: no system call.
    Trusted,
    /// Place a watch on it (on this inotify instance; the folder's device), then check.
    Watch(BorrowedFd<'a>, u64),
    /// One `fstatat`.
    Stat,
}

/// What identifies one version of a file the store never rewrites in place: every write of
/// the store makes a new inode (rename), and a foreign write in place changes the size or
/// the change time, which only the kernel sets (unlike the modification time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileIdentity {
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) size: i64,
    pub(super) ctime: (i64, i64),
}

impl FileIdentity {
    // The field types differ between targets.
    #[allow(clippy::unnecessary_cast)]
    pub(super) fn of(st: &rustix::fs::Stat) -> FileIdentity {
        FileIdentity {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as i64,
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }
}

/// Room for `{id}.json` and its NUL for any `u64` id.
pub(super) const TASK_CNAME_LEN: usize = 32;

/// The file name of task `id` in the `claude-code` layout (`{id}.json`), written into `buf`
/// as a C string: `list` checks every cached file by name, and building each name on the
/// stack spares an allocation per file.
pub(super) fn task_cname(id: TaskId, buf: &mut [u8; TASK_CNAME_LEN]) -> &std::ffi::CStr {
    const _: () = assert!(matches!(LAYOUT, Layout::ClaudeCode));
    let mut digits = [0u8; 20];
    let mut n = id.0;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let digits = &digits[at..];
    let end = digits.len() + b".json".len();
    buf[..digits.len()].copy_from_slice(digits);
    buf[digits.len()..end].copy_from_slice(b".json");
    buf[end] = 0;
    std::ffi::CStr::from_bytes_with_nul(&buf[..=end]).expect("one NUL, at the end")
}

/// What identifies one state of a list folder's names: any create, removal or rename in it
/// moves its modification and change times (and usually its size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FolderStamp {
    pub(super) mtime: (i64, i64),
    pub(super) ctime: (i64, i64),
    pub(super) size: i64,
}

impl FolderStamp {
    // The field types differ between targets.
    #[allow(clippy::unnecessary_cast)]
    pub(super) fn of(st: &rustix::fs::Stat) -> FolderStamp {
        FolderStamp {
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
            size: st.st_size as i64,
        }
    }
}

/// A task `list` decoded, shared by the cache and by the answers that include it, so that
/// neither a hit nor an answer written from it copies the task. The forms its answers write
/// it in are made the first time they are needed, and kept with it.
///
/// A task taken from the list's index on disk (`index.rs`) comes with its compact JSON and the
/// bytes of its file, and is decoded from those bytes only when something needs the task
/// itself (in-process `list`): answers through `serve` and `mcp` are written from its JSON.
pub struct SharedTask {
    task: OnceLock<Option<Task>>,
    /// For a task taken from the index: its id and the bytes of its file.
    source: Option<(TaskId, Arc<[u8]>)>,
    json: OnceLock<Box<[u8]>>,
    /// For `taskproof mcp`'s `task_list`: the pretty JSON as it stands in the answer's text,
    /// escaped as that text is inside the message's JSON.
    pretty_escaped: OnceLock<Box<[u8]>>,
}

impl SharedTask {
    pub fn new(task: Task) -> Arc<SharedTask> {
        Arc::new(SharedTask {
            task: OnceLock::from(Some(task)),
            source: None,
            json: OnceLock::new(),
            pretty_escaped: OnceLock::new(),
        })
    }

    /// A task of the index: `json` is what [`SharedTask::json`] gives for it, `raw` its
    /// file's bytes, decoded when the task is first needed.
    pub(super) fn from_index(id: TaskId, raw: Arc<[u8]>, json: Box<[u8]>) -> Arc<SharedTask> {
        Arc::new(SharedTask {
            task: OnceLock::new(),
            source: Some((id, raw)),
            json: OnceLock::from(json),
            pretty_escaped: OnceLock::new(),
        })
    }

    /// The task; `None` only for a task of the index whose bytes do not decode to it, which
    /// means the index was not written by this store (see `StrictStore::list`).
    pub fn task(&self) -> Option<&Task> {
        self.task
            .get_or_init(|| {
                let (id, raw) = self.source.as_ref()?;
                match decode_task(*id, &Txn::file_name(*id), raw, Strictness::Strict) {
                    Slot::Task(t) => Some(t),
                    Slot::Missing | Slot::Corrupt(_) => None,
                }
            })
            .as_ref()
    }

    /// The task as compact JSON, the bytes `serde_json::to_vec(task)` gives.
    pub fn json(&self) -> &[u8] {
        self.json.get_or_init(|| {
            // Only a task of the index is made without its JSON.
            let task = self.task().expect("a task made with its value");
            serde_json::to_vec(task).expect("tasks serialize").into()
        })
    }

    /// The task as pretty JSON (two spaces a level) standing two levels deep, as an item of
    /// `{"tasks": [...]}` pretty-printed (every line after the first indented four more
    /// spaces), escaped as the contents of a JSON string: the bytes that stand for the task
    /// inside the text of an MCP `task_list` result, as it goes out in the message.
    pub fn pretty_in_list_escaped(&self) -> &[u8] {
        self.pretty_escaped
            .get_or_init(|| super::pretty::pretty_escaped(self.json(), 2).into())
    }

    /// The task itself: moved out when nothing else holds it, copied otherwise; `None` as
    /// for [`SharedTask::task`].
    pub fn into_task(this: Arc<SharedTask>) -> Option<Task> {
        match Arc::try_unwrap(this) {
            Ok(mut s) => {
                s.task();
                s.task.take().flatten()
            }
            Err(a) => a.task().cloned(),
        }
    }
}

/// A task `list` decoded, with the identity of the file it came from and, when one proves
/// it unchanged, the inotify watch on that file's inode (see `watch.rs`).
pub(super) struct CachedTask {
    pub(super) identity: FileIdentity,
    pub(super) task: Arc<SharedTask>,
    /// The bytes of the file it was decoded from, for the index (`index.rs`).
    pub(super) raw: Arc<[u8]>,
    pub(super) wd: Option<i32>,
}

/// What `list` keeps of a list between calls.
#[derive(Default)]
pub(super) struct ListCache {
    /// The folder's device and inode: a folder replaced since is read afresh.
    pub(super) folder: (u64, u64),
    /// The task ids found in the folder, sorted, with the folder's stamp when they were
    /// read; kept only when the folder had not changed for [`LIST_SETTLE`].
    pub(super) names: Option<(FolderStamp, Vec<TaskId>)>,
    pub(super) tasks: HashMap<TaskId, CachedTask>,
    /// The watches on the cached files, when the list is large enough and its folder on a
    /// local file system.
    pub(super) watcher: Option<super::watch::Watcher>,
    /// How many files the last list had to `stat`, watch or read (the others were proven
    /// unchanged by their watch).
    pub(super) checked: usize,
    /// How many cached files the list's index on disk does not hold (see `index.rs`).
    pub(super) unindexed: usize,
    /// How many files the last list took from the index (tests).
    pub(super) from_index: usize,
}

/// What a confirmed cache entry's watch becomes.
pub(super) enum WatchUpdate {
    Keep,
    /// A watch was placed on the file before its identity was confirmed.
    Set(i32),
    /// The file cannot be proven unchanged by a watch.
    Clear,
}

/// One task file as `list` got it.
pub(super) enum Listed {
    /// Unchanged since it was cached; what to do with the entry's watch.
    Hit(Arc<SharedTask>, WatchUpdate),
    /// Read from disk, with the identity to cache it under and the bytes it held, when it
    /// may be kept.
    Read(Arc<SharedTask>, Option<(FileIdentity, Arc<[u8]>)>),
    /// Missing.
    Missing,
    /// Not a task.
    Corrupt,
}

impl Txn<'_> {
    /// The task `id` as this operation sees it (its own changes included).
    pub(super) fn slot(&mut self, id: TaskId) -> OpResult<Slot> {
        if let Some(t) = self.overlay.get(&id) {
            return Ok(match t {
                Some(t) => Slot::Task(t.clone()),
                None => Slot::Missing,
            });
        }
        if let Some(s) = self.cache.get(&id) {
            return Ok(s.clone());
        }
        let s = self.read_disk(id)?;
        self.cache.insert(id, s.clone());
        Ok(s)
    }

    /// The task `id`, or `not_found` / `corrupt`.
    pub(super) fn task(&mut self, id: TaskId) -> OpResult<Task> {
        match self.slot(id)? {
            Slot::Task(t) => Ok(t),
            Slot::Missing => Err(Failure::new(
                ErrorKind::NotFound,
                format!("no task {id} in list {}", self.list),
            )),
            Slot::Corrupt(why) => Err(Failure::new(ErrorKind::Corrupt, why)),
        }
    }

    pub(super) fn put(&mut self, task: Task) {
        self.overlay.insert(task.id, Some(task));
    }

    pub(super) fn edges_of(
        &mut self,
        id: TaskId,
    ) -> OpResult<(BTreeSet<TaskId>, BTreeSet<TaskId>)> {
        Ok(match self.slot(id)? {
            Slot::Task(t) => (t.blocks, t.blocked_by),
            _ => Default::default(),
        })
    }

    /// Blockers of `task` that are not completed. A missing blocker does not block; an
    /// unreadable one does, since nobody can tell that it finished.
    pub(super) fn unfinished_blockers(&mut self, task: &Task) -> OpResult<Vec<TaskId>> {
        let mut out = Vec::new();
        for &b in &task.blocked_by {
            match self.slot(b)? {
                Slot::Task(t) if t.status == Status::Completed => {}
                Slot::Missing => {}
                _ => out.push(b),
            }
        }
        Ok(out)
    }

    /// A path `start -> ... -> goal` along "blocks" edges, if there is one. Edges are taken
    /// from both sides: forward through each task's `blocks`, then backward through each
    /// task's `blockedBy`, so an edge recorded on one side only (a file another program
    /// wrote) is still seen.
    pub(super) fn path(&mut self, start: TaskId, goal: TaskId) -> OpResult<Option<Vec<TaskId>>> {
        for forward in [true, false] {
            let (from, to) = if forward {
                (start, goal)
            } else {
                (goal, start)
            };
            let mut parent: BTreeMap<TaskId, TaskId> = BTreeMap::new();
            let mut stack = vec![from];
            let mut seen = BTreeSet::from([from]);
            while let Some(x) = stack.pop() {
                if x == to {
                    let mut path = vec![x];
                    let mut cur = x;
                    while let Some(&p) = parent.get(&cur) {
                        path.push(p);
                        cur = p;
                    }
                    if forward {
                        path.reverse();
                    }
                    return Ok(Some(path));
                }
                let (blocks, blocked_by) = self.edges_of(x)?;
                let next = if forward { blocks } else { blocked_by };
                for y in next {
                    if seen.insert(y) {
                        parent.insert(y, x);
                        stack.push(y);
                    }
                }
            }
        }
        Ok(None)
    }

    /// Adds the edge "`from` blocks `to`" for a request addressed to `me` (one of the two).
    pub(super) fn add_edge(&mut self, from: TaskId, to: TaskId, me: TaskId) -> OpResult<()> {
        let store = self.store;
        let other = if from == me { to } else { from };
        let other_task = match self.slot(other)? {
            Slot::Task(t) => Some(t),
            Slot::Missing if store.broken(Mutant::NoReferenceCheck) => None,
            Slot::Missing => {
                return Err(Failure::new(
                    ErrorKind::Dangling,
                    format!("task {other} does not exist in list {}", self.list),
                ));
            }
            Slot::Corrupt(why) => {
                return Err(Failure::new(
                    ErrorKind::Corrupt,
                    format!("task {other} cannot be read: {why}"),
                ));
            }
        };
        let from_task = self.slot(from)?;
        let to_task = self.slot(to)?;
        if let (Slot::Task(f), Slot::Task(t)) = (&from_task, &to_task) {
            if f.blocks.contains(&to) && t.blocked_by.contains(&from) {
                return Ok(()); // already there: nothing changes
            }
            // S5: a completed task never gains a blocker that is not completed.
            if t.status == Status::Completed
                && f.status != Status::Completed
                && !store.broken(Mutant::NoAndBlocking)
            {
                return Err(Failure::new(
                    ErrorKind::Blocked,
                    format!("task {to} is completed and cannot gain unfinished blocker {from}"),
                ));
            }
        }
        if !store.broken(Mutant::NoCycleCheck) {
            if from == to {
                return Err(Failure::new(
                    ErrorKind::Cycle,
                    format!("task {from} cannot block itself"),
                ));
            }
            if let Some(path) = self.path(to, from)? {
                let mut names: Vec<String> = path.iter().map(|i| i.to_string()).collect();
                names.push(to.to_string());
                return Err(Failure::new(
                    ErrorKind::Cycle,
                    format!(
                        "{from} blocks {to} would close the cycle {}",
                        names.join(" -> ")
                    ),
                ));
            }
        }
        let mirror = !store.broken(Mutant::NoMirror);
        if let Slot::Task(mut f) = from_task
            && (from == me || (mirror && other_task.is_some()))
        {
            f.blocks.insert(to);
            self.put(f);
        }
        // Re-read: when from == to the first put changed the same task.
        if let Slot::Task(mut t) = self.slot(to)?
            && (to == me || (mirror && other_task.is_some()))
        {
            t.blocked_by.insert(from);
            self.put(t);
        }
        Ok(())
    }

    /// Removes the edge "`from` blocks `to`" from both sides (when the other side is a task
    /// that can be read). Removing an edge that is not there changes nothing.
    pub(super) fn remove_edge(&mut self, from: TaskId, to: TaskId, me: TaskId) -> OpResult<()> {
        let mirror = !self.store.broken(Mutant::NoMirror);
        if let Slot::Task(mut f) = self.slot(from)?
            && (from == me || mirror)
            && f.blocks.remove(&to)
        {
            self.put(f);
        }
        if let Slot::Task(mut t) = self.slot(to)?
            && (to == me || mirror)
            && t.blocked_by.remove(&from)
        {
            self.put(t);
        }
        Ok(())
    }

    pub(super) fn change_status(&mut self, id: TaskId, status: &Status) -> OpResult<()> {
        let store = self.store;
        let mut task = self.task(id)?;
        if !status.is_known() && !store.broken(Mutant::AnyStatus) {
            return Err(Failure::new(
                ErrorKind::Invalid,
                format!(
                    "patch.status: expected pending, in_progress or completed, got {:?}",
                    status.as_str()
                ),
            ));
        }
        if &task.status == status {
            return Ok(()); // any status to itself: no change (S4)
        }
        if task.status == Status::Completed && !store.broken(Mutant::FinalNotFinal) {
            return Err(Failure::new(
                ErrorKind::Transition,
                format!("task {id} is completed, which is final; it cannot become {status}"),
            ));
        }
        if matches!(status, Status::InProgress | Status::Completed)
            && !store.broken(Mutant::NoAndBlocking)
        {
            let unfinished = self.unfinished_blockers(&task)?;
            if !unfinished.is_empty() {
                return Err(blocked(id, &format!("become {status}"), &unfinished));
            }
        }
        task.status = status.clone();
        self.put(task);
        Ok(())
    }

    /// The id the next `create` gets: one more than the high-watermark, and past any task
    /// that exists. A missing or damaged watermark falls back to the highest id on disk, so
    /// it never hands out the id of an existing task (S1).
    pub(super) fn next_id(&mut self) -> OpResult<TaskId> {
        let store = self.store;
        let highest_on_disk = |dir: &Dir| -> OpResult<u64> {
            Ok(dir
                .entries()
                .map_err(io_failure)?
                .iter()
                .filter_map(|(n, _)| LAYOUT.task_id_of(n))
                .map(TaskId::get)
                .max()
                .unwrap_or(0))
        };
        if store.broken(Mutant::ReusedIds) {
            return Ok(TaskId(highest_on_disk(&self.dir)? + 1));
        }
        let hwm = self.read_watermark()?;
        let mut next = match hwm {
            Some(h) => h.checked_add(1),
            None => highest_on_disk(&self.dir)?.checked_add(1),
        }
        .ok_or_else(|| io_failure("the id space of this list is exhausted"))?;
        // A watermark lower than a task another program wrote must not collide with it.
        while self
            .dir
            .entry_type(&Self::file_name(TaskId(next)))
            .map_err(io_failure)?
            .is_some()
        {
            next += 1;
        }
        Ok(TaskId(next))
    }

    /// Writes one file now, the way the mutants that break whole-file writes do.
    pub(super) fn write_file(&self, name: &str, bytes: Vec<u8>) -> OpResult<()> {
        let s = self.store;
        let r = if s.broken(Mutant::TruncateWrite) || s.broken(Mutant::FollowsSymlinks) {
            self.dir.write_in_place(name, &bytes)
        } else if self.lock.is_none() {
            self.dir.write_atomic_unlocked(name, &bytes)
        } else {
            self.dir.write_atomic(name, &bytes, s.options.durable)
        };
        r.map_err(|e| io_failure(format!("{name}: {e}")))
    }

    /// Records `id` as the highest id assigned, on its own (never in the journal), before the
    /// task it names is written.
    ///
    /// The new value goes into the scratch file in place, which is then exchanged with the
    /// watermark in one rename ([`Dir::write_exchange`]): no inode or block is allocated, with
    /// fsync or without, and nothing is synced here; with fsync the exchange is made durable
    /// by the folder sync that makes the new task durable, so a durable create costs the two
    /// sync rounds of the task's write. After a power cut either watermark file may hold an
    /// older value than its last write. That is safe: every acknowledged task that still
    /// exists is on disk, and `next_id` steps past every file that exists; and a durable
    /// delete first makes *both* files hold at least the deleted id durably
    /// ([`Txn::persist_watermark`]). Values only grow and are only ever written in place, so
    /// from then on whichever file carries the watermark's name reads that id or more.
    pub(super) fn write_watermark(&self, id: TaskId) -> OpResult<()> {
        let s = self.store;
        let bytes = format!("{id}\n").into_bytes();
        if s.broken(Mutant::TruncateWrite)
            || s.broken(Mutant::FollowsSymlinks)
            || self.lock.is_none()
        {
            return self.write_file(HIGHWATERMARK_NAME, bytes);
        }
        self.dir
            .write_exchange(HIGHWATERMARK_NAME, HIGHWATERMARK_SCRATCH_NAME, &bytes)
            .map_err(|e| io_failure(format!("{HIGHWATERMARK_NAME}: {e}")))
    }

    /// Before a durable delete of `deleted`: makes the watermark and its scratch twin both
    /// hold, on disk, at least every id assigned so far, so that the deleted id survives a
    /// power cut under the watermark's name whichever of the two a later create's exchange
    /// leaves there (creates sync neither; see [`Txn::write_watermark`]). A watermark that
    /// already covers the id is synced as it is; a lower, unreadable or missing one is written
    /// whole and synced. The twin is written in place and synced. One more `fdatasync` than
    /// a delete with a single watermark file: deletes pay so that creates need not.
    pub(super) fn persist_watermark(&mut self, deleted: TaskId) -> OpResult<()> {
        let fail = |name: &str, e: std::io::Error| io_failure(format!("{name}: {e}"));
        let current = self.read_watermark()?;
        let highest = match current {
            Some(h) if h >= deleted.get() => h,
            _ => (self.next_id()?.get() - 1).max(deleted.get()),
        };
        let synced = current == Some(highest)
            && self
                .dir
                .sync_file(HIGHWATERMARK_NAME)
                .map_err(|e| fail(HIGHWATERMARK_NAME, e))?;
        let bytes = format!("{highest}\n").into_bytes();
        if !synced {
            self.dir
                .write_atomic(HIGHWATERMARK_NAME, &bytes, true)
                .map_err(|e| fail(HIGHWATERMARK_NAME, e))?;
        }
        self.dir
            .write_scratch_durably(HIGHWATERMARK_SCRATCH_NAME, &bytes)
            .map_err(|e| fail(HIGHWATERMARK_SCRATCH_NAME, e))
    }

    /// The watermark's value; `None` when it is missing, a link, or not a number.
    pub(super) fn read_watermark(&self) -> OpResult<Option<u64>> {
        let mut buf = Vec::with_capacity(24);
        match self.dir.read_into(HIGHWATERMARK_NAME, &mut buf) {
            Ok(_) => Ok(parse_watermark(&buf)),
            Err(ReadError::Io(e)) => Err(io_failure(e)),
            Err(_) => Ok(None),
        }
    }

    /// The audit record of this operation's changes, when the list is audited and something
    /// changed.
    pub(super) fn audit_record(&self) -> OpResult<Option<Vec<u8>>> {
        if !self.store.audit && !crate::audit::is_audited(&self.dir).map_err(io_failure)? {
            return Ok(None);
        }
        let changes: Vec<crate::audit::Changed> = self
            .overlay
            .iter()
            .map(|(id, after)| crate::audit::Changed {
                id: id.to_string(),
                before: match self.cache.get(id) {
                    Some(Slot::Task(t)) => Some(t.to_json()),
                    Some(Slot::Corrupt(why)) => Some(serde_json::json!({ "corrupt": why })),
                    Some(Slot::Missing) | None => None,
                },
                after: after.as_ref().map(Task::to_json),
            })
            .filter(|c| c.before != c.after)
            .collect();
        if changes.is_empty() {
            return Ok(None);
        }
        Ok(Some(crate::audit::record(&self.list, &changes)))
    }

    /// Writes every changed task, atomically as a group.
    pub(super) fn commit(&mut self) -> OpResult<()> {
        let entries: Vec<Entry> = self
            .overlay
            .iter()
            .map(|(id, t)| Entry {
                name: Self::file_name(*id),
                content: t.as_ref().map(encode_task),
            })
            .collect();
        let s = self.store;
        if s.broken(Mutant::TruncateWrite)
            || s.broken(Mutant::FollowsSymlinks)
            || self.lock.is_none()
        {
            for e in &entries {
                match &e.content {
                    Some(c) => self.write_file(&e.name, c.clone())?,
                    None => {
                        self.dir.remove(&e.name).map_err(io_failure)?;
                    }
                }
            }
        } else {
            let _claude_code_locks = if s.claude_code_locks && !entries.is_empty() {
                let names = entries.iter().map(|e| e.name.as_str());
                Some(
                    crate::cclock::lock_change(&self.dir, self.cc_list.take(), names)
                        .map_err(io_failure)?,
                )
            } else {
                None
            };
            if let Some(line) = self.audit_record()? {
                crate::audit::commit(&self.dir, &entries, &line, s.options.durable)
                    .map_err(io_failure)?;
            } else {
                journal::commit(&self.dir, &entries, s.options.durable).map_err(io_failure)?;
            }
        }
        // What was committed is now what the disk says.
        for (id, t) in std::mem::take(&mut self.overlay) {
            self.cache.insert(
                id,
                match t {
                    Some(t) => Slot::Task(t),
                    None => Slot::Missing,
                },
            );
        }
        Ok(())
    }
}
