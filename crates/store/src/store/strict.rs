//! The strict reference store: profile `strict`, layout `claude-code` (SPEC §3).
//!
//! Layout: `ROOT/{list}/{id}.json`, one pretty-printed task per file, with `.lock`,
//! `.highwatermark`, `.journal` (only while a multi-file change is under way) and `.tmp`
//! (only while one file is being written) beside them.
//!
//! Every operation, reads included, runs as one transaction under the list's exclusive
//! flock: first a stale `.tmp` is removed and a left journal replayed (so the previous
//! holder's crash is repaired before anyone looks), then the request is checked in SPEC §3's
//! order against a copy-on-write overlay of the tasks it reads, and only if every check passes
//! are the changed files committed, whole and, when several, through the journal. That is
//! what makes operations linearizable across processes (S19), claims exactly-once (S20), and
//! a failed request change nothing (§2).
//!
//! An operation reads only what it needs: the task, its neighbours, and for a new edge the
//! tasks reachable from it. Only `list` reads the whole folder.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rayon::prelude::*;
use serde_json::Value;

use super::fsys::{Dir, LOCK_NAME, LockGuard, ReadError};
use super::journal::{self, Entry};
use super::mutant::Mutant;
use super::{Options, TaskStore};
use crate::protocol::{
    ErrorKind, Failure, Feature, Hello, Layout, PROTOCOL_VERSION, Request, Response,
};
use crate::task::{Change, ListName, NewTask, Patch, Status, Strictness, Task, TaskId, json_depth};

/// The high-watermark file: the highest id ever assigned in the list, as a JSON number.
pub const HIGHWATERMARK_NAME: &str = ".highwatermark";
/// The store's second watermark file, exchanged with [`HIGHWATERMARK_NAME`] on each create
/// (see [`Dir::write_exchange`]); it holds an older value and is never read as the watermark.
pub const HIGHWATERMARK_SCRATCH_NAME: &str = ".highwatermark.next";

/// The value of a watermark file: a whole number, blanks around it allowed. Zero bytes after
/// it are allowed too: they are what a file that grew (`9` to `10`) reads as when the power
/// was cut after its new length reached the disk but before its new bytes did, and the number
/// before them is the old value, which is still a floor for new ids.
pub fn parse_watermark(bytes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(bytes).ok()?;
    text.trim_end_matches('\0').trim().parse().ok()
}
/// Metadata larger than this, serialized, is `invalid` (S12 requires 64 KiB to be accepted).
pub const MAX_METADATA_BYTES: usize = 256 * 1024;
/// Metadata nested deeper than this is `invalid` (S12 requires 32 levels to be accepted).
pub const MAX_METADATA_DEPTH: usize = 64;

const LAYOUT: Layout = Layout::ClaudeCode;

/// The strict store. Cheap to open; holds only the root folder open between operations, so
/// any number of instances (threads or processes) can share a root.
pub struct StrictStore {
    root: PathBuf,
    root_dir: Dir,
    options: Options,
    mutant: Option<Mutant>,
    /// The private folder of the `memory-only` mutant, removed with the instance.
    _private: Option<tempfile::TempDir>,
    /// The tasks `list` decoded, by list, so that a file unchanged since is only `stat`ed.
    list_cache: Mutex<HashMap<String, ListCache>>,
    /// How long ago a file must have changed for `list` to cache it (see [`LIST_SETTLE`]).
    list_settle: Duration,
    /// Lists of at least this many task files have their cached files watched (see
    /// [`LIST_WATCH_MIN`]).
    list_watch_min: usize,
    /// Lists of at least this many task files keep their cache on disk too (see
    /// [`LIST_INDEX_MIN`]).
    list_index_min: usize,
    /// Record every change in the list's audit log, starting it if needed (a list whose
    /// log exists is audited anyway; see `audit.rs`).
    audit: bool,
    /// Also take Claude Code's lock directories around each change (see `cclock.rs`).
    claude_code_locks: bool,
}

/// A file that changed less than this long ago could change again in place without its
/// change time moving (timestamps are coarse), so `list` does not cache it yet: the rule git
/// applies to "racy" index entries.
const LIST_SETTLE: Duration = Duration::from_secs(2);

/// The smallest list whose cached files `list` watches with inotify instead of `stat`ing
/// each: below it the `stat`s cost little, and an inotify instance (of which a user may have
/// only 128) is not worth taking.
const LIST_WATCH_MIN: usize = 256;

/// The smallest list whose cache `list` also keeps on disk, in the list's `.list-index`, for
/// the first list of the next process (see `index.rs`): below it reading the files is quick.
const LIST_INDEX_MIN: usize = 256;

type Outcome<T> = Result<T, Failure>;

fn io_failure(e: impl std::fmt::Display) -> Failure {
    Failure::new(ErrorKind::Io, e.to_string())
}

fn not_found(list: &ListName, id: TaskId) -> Failure {
    Failure::new(ErrorKind::NotFound, format!("no task {id} in list {list}"))
}

impl StrictStore {
    /// Opens the store on `root`, which must exist.
    pub fn open(root: &Path, options: Options) -> io::Result<StrictStore> {
        Ok(StrictStore {
            root: root.to_path_buf(),
            root_dir: Dir::open_root(root)?,
            options,
            mutant: None,
            _private: None,
            list_cache: Mutex::new(HashMap::new()),
            list_settle: LIST_SETTLE,
            list_watch_min: LIST_WATCH_MIN,
            list_index_min: LIST_INDEX_MIN,
            audit: false,
            claude_code_locks: false,
        })
    }

    /// Makes this store honour Claude Code's lock protocol as well as its own, for a list
    /// Claude Code writes too.
    pub fn with_claude_code_locks(mut self) -> StrictStore {
        self.claude_code_locks = true;
        self
    }

    /// Makes this store start the audit log of every list it changes.
    pub fn with_audit(mut self) -> StrictStore {
        self.audit = true;
        self
    }

    /// Opens the store with one rule broken on purpose (see [`Mutant`]).
    pub fn open_mutant(root: &Path, options: Options, mutant: Mutant) -> io::Result<StrictStore> {
        let mut s = StrictStore::open(root, options)?;
        if mutant == Mutant::MemoryOnly {
            let private = tempfile::tempdir()?;
            s.root_dir = Dir::open_root(private.path())?;
            s.root = private.path().to_path_buf();
            s._private = Some(private);
        }
        s.mutant = Some(mutant);
        Ok(s)
    }

    fn broken(&self, m: Mutant) -> bool {
        self.mutant == Some(m)
    }

    fn strictness(&self) -> Strictness {
        if self.broken(Mutant::AnyStatus) {
            Strictness::Lenient
        } else {
            Strictness::Strict
        }
    }

    /// Opens a list's folder and takes its lock, repairing what a crashed holder left.
    /// `Ok(None)` when the list was never written and `create` is false: reads of a list that
    /// does not exist create nothing.
    fn begin(&self, list: &str, create: bool) -> Outcome<Option<Txn<'_>>> {
        let folder = if self.broken(Mutant::ListsNotIsolated) {
            "shared"
        } else {
            list
        };
        let opened = if self.broken(Mutant::EscapesRoot) {
            // The bug on purpose: the name is joined as a path, `..` and all.
            let path = self.root.join(folder);
            if create {
                std::fs::create_dir_all(&path).map_err(io_failure)?;
            }
            match Dir::open_root(&path) {
                Ok(d) => Ok(Some(d)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(ReadError::Io(e)),
            }
        } else if create {
            self.root_dir.create_dir(folder).map(Some)
        } else {
            self.root_dir.open_dir(folder)
        };
        let dir = match opened {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(None),
            Err(e @ (ReadError::Symlink | ReadError::Special)) => {
                return Err(Failure::new(
                    ErrorKind::Corrupt,
                    format!("list folder {list}: {e}"),
                ));
            }
            Err(e) => return Err(io_failure(format!("list folder {list}: {e}"))),
        };
        let lock = if self.broken(Mutant::NoLock) {
            None
        } else {
            let guard = dir.lock(LOCK_NAME).map_err(io_failure)?;
            // With the lock held no live writer owns `.tmp` or is between the journal's
            // steps, so whatever is there was left by a process that died.
            dir.remove_stale_tmp().map_err(io_failure)?;
            journal::recover(&dir, self.options.durable).map_err(io_failure)?;
            super::audit::recover(&dir, self.options.durable).map_err(io_failure)?;
            Some(guard)
        };
        Ok(Some(Txn {
            store: self,
            dir,
            list: list.to_string(),
            _lock: lock,
            cache: HashMap::new(),
            overlay: BTreeMap::new(),
            cc_list: None,
        }))
    }

    fn check_metadata(md: &serde_json::Map<String, Value>, field: &str) -> Outcome<()> {
        let v = Value::Object(md.clone());
        let depth = json_depth(&v);
        if depth > MAX_METADATA_DEPTH {
            return Err(Failure::new(
                ErrorKind::Invalid,
                format!(
                    "{field}: nested {depth} levels deep; at most {MAX_METADATA_DEPTH} are accepted"
                ),
            ));
        }
        let size = serde_json::to_vec(&v)
            .map(|b| b.len())
            .unwrap_or(usize::MAX);
        if size > MAX_METADATA_BYTES {
            return Err(Failure::new(
                ErrorKind::Invalid,
                format!(
                    "{field}: {size} bytes serialized; at most {MAX_METADATA_BYTES} are accepted"
                ),
            ));
        }
        Ok(())
    }
}

impl super::Operations for StrictStore {
    fn create(&self, list: &ListName, new: &NewTask) -> Outcome<Task> {
        if let Some(md) = &new.metadata {
            Self::check_metadata(md, "task.metadata")?;
        }
        let mut tx = match self.begin(list.as_str(), false)? {
            Some(tx) => tx,
            // A list never written has no task an edge could name; refuse before creating
            // its folder, so the failed request leaves nothing behind.
            None if !new.blocked_by.is_empty() || !new.blocks.is_empty() => {
                let first = new
                    .blocked_by
                    .iter()
                    .chain(&new.blocks)
                    .next()
                    .expect("edge");
                return Err(Failure::new(
                    ErrorKind::Dangling,
                    format!("task {first} does not exist in list {list}"),
                ));
            }
            None => self.begin(list.as_str(), true)?.expect("created"),
        };
        if self.claude_code_locks {
            // Claude Code's TaskCreate picks its id under this lock: hold it from our choice
            // of the id to the write, so the two never pick the same one.
            tx.cc_list = Some(super::cclock::lock_list(&tx.dir).map_err(io_failure)?);
        }
        let id = tx.next_id()?;
        let mut task = Task::new(id, new.subject.clone());
        task.description = new.description.clone();
        task.active_form = new.active_form.clone();
        task.owner = new.owner.clone();
        task.metadata = new.metadata.clone();
        tx.put(task);
        // An edge naming the id this create is about to assign names a task that did not
        // exist when the request was made (the requester cannot know the id): `dangling`, as
        // in a list never written above, not a self-cycle.
        let own_id = |x: TaskId| -> Outcome<()> {
            if x == id && !self.broken(Mutant::NoReferenceCheck) {
                return Err(Failure::new(
                    ErrorKind::Dangling,
                    format!("task {x} does not exist in list {list}"),
                ));
            }
            Ok(())
        };
        for &b in &new.blocked_by {
            own_id(b)?;
            tx.add_edge(b, id, id)?;
        }
        for &x in &new.blocks {
            own_id(x)?;
            tx.add_edge(id, x, id)?;
        }
        // The watermark goes first and on its own: if the process dies before the task is
        // written, the id is skipped, never handed out twice (S1).
        tx.write_watermark(id)?;
        tx.commit()?;
        tx.task(id)
    }

    fn get(&self, list: &ListName, id: TaskId) -> Outcome<Task> {
        let Some(mut tx) = self.begin(list.as_str(), false)? else {
            return Err(not_found(list, id));
        };
        tx.task(id)
    }

    fn update(&self, list: &ListName, id: TaskId, patch: &Patch) -> Outcome<Task> {
        if let Change::Set(md) = &patch.metadata {
            Self::check_metadata(md, "patch.metadata")?;
        }
        let Some(mut tx) = self.begin(list.as_str(), false)? else {
            return Err(not_found(list, id));
        };
        let mut task = tx.task(id)?;
        super::policy::check_update(&tx.dir, &task, patch, super::audit::actor)?;

        // 1. Fields and metadata.
        if self.broken(Mutant::MetadataReplaced)
            && let Change::Set(md) = &patch.metadata
        {
            let mut p = patch.clone();
            p.metadata = Change::Keep;
            p.apply_fields(&mut task);
            task.metadata = if md.is_empty() {
                None
            } else {
                Some(md.clone())
            };
        } else {
            patch.apply_fields(&mut task);
        }
        if let Some(md) = &task.metadata {
            Self::check_metadata(md, "metadata after the merge")?;
        }
        if self.broken(Mutant::UnknownFieldsDropped) {
            task.extra.clear();
        }
        tx.put(task);

        // 2. Edge removals.
        for &x in &patch.remove_blocked_by {
            tx.remove_edge(x, id, id)?;
        }
        for &x in &patch.remove_blocks {
            tx.remove_edge(id, x, id)?;
        }

        // 3. Status (S3, S4, S5).
        if let Some(status) = &patch.status {
            tx.change_status(id, status)?;
        }

        // 4. Edge additions, blockedBy first, id by id (S5, S6, S7).
        for &x in &patch.add_blocked_by {
            tx.add_edge(x, id, id)?;
        }
        for &x in &patch.add_blocks {
            tx.add_edge(id, x, id)?;
        }
        tx.commit()?;
        tx.task(id)
    }

    fn delete(&self, list: &ListName, id: TaskId) -> Outcome<()> {
        let Some(mut tx) = self.begin(list.as_str(), false)? else {
            return Err(not_found(list, id));
        };
        match tx.slot(id)? {
            Slot::Missing => return Err(not_found(list, id)),
            // A corrupt file (or a link) is removed as it is; a link's target is untouched.
            Slot::Corrupt(_) => tx.overlay.insert(id, None),
            Slot::Task(task) => {
                super::policy::check_delete(&tx.dir, &task, super::audit::actor)?;
                if !self.broken(Mutant::OrphansOnDelete) {
                    for n in task.blocks.union(&task.blocked_by) {
                        if let Slot::Task(mut other) = tx.slot(*n)? {
                            other.blocks.remove(&id);
                            other.blocked_by.remove(&id);
                            tx.put(other);
                        }
                    }
                }
                tx.overlay.insert(id, None)
            }
        };
        // The `no-lock` mutant writes without the lock, so it cannot use `.tmp` here.
        if self.options.durable && !self.broken(Mutant::NoLock) {
            tx.persist_watermark(id)?;
        }
        tx.commit()
    }

    fn list(&self, list: &ListName) -> Outcome<(Vec<Task>, Vec<String>)> {
        let (tasks, corrupt) = self.list_shared(list)?;
        match tasks.into_iter().map(SharedTask::into_task).collect() {
            Some(tasks) => Ok((tasks, corrupt)),
            // A task of the index that does not decode: the index is dropped and the list
            // read from its files.
            None => {
                self.forget_list(list)?;
                let (tasks, corrupt) = self.list_from(list, false)?;
                let tasks = tasks.into_iter().map(SharedTask::into_task);
                // Read from the files, every task is decoded.
                Ok((tasks.flatten().collect(), corrupt))
            }
        }
    }

    fn claim(&self, list: &ListName, id: TaskId, owner: &str) -> Outcome<Task> {
        let Some(mut tx) = self.begin(list.as_str(), false)? else {
            return Err(not_found(list, id));
        };
        let mut task = tx.task(id)?;
        if let Some(o) = &task.owner {
            return Err(Failure::new(
                ErrorKind::Conflict,
                format!("task {id} is already owned by {o:?}"),
            ));
        }
        if task.status != Status::Pending {
            return Err(Failure::new(
                ErrorKind::Conflict,
                format!("task {id} is {}, not pending", task.status),
            ));
        }
        let unfinished = tx.unfinished_blockers(&task)?;
        if !unfinished.is_empty() && !self.broken(Mutant::NoAndBlocking) {
            return Err(blocked(id, "be claimed", &unfinished));
        }
        task.status = Status::InProgress;
        task.owner = Some(owner.to_string());
        if self.broken(Mutant::ClaimWithoutLock) {
            // The bug on purpose: the check above ran under the lock, the write below does
            // not, so two claimers can both pass the check before either writes.
            let dir =
                std::mem::replace(&mut tx.dir, Dir::open_root(&self.root).map_err(io_failure)?);
            drop(tx);
            std::thread::yield_now();
            dir.write_atomic_unlocked(&format!("{id}.json"), &encode_task(&task))
                .map_err(io_failure)?;
            return Ok(task);
        }
        tx.put(task);
        tx.commit()?;
        tx.task(id)
    }
}

fn blocked(id: TaskId, what: &str, unfinished: &[TaskId]) -> Failure {
    let list: Vec<String> = unfinished.iter().map(|i| i.to_string()).collect();
    Failure::new(
        ErrorKind::Blocked,
        format!(
            "task {id} cannot {what}: blocked by unfinished task{} {}",
            if list.len() == 1 { "" } else { "s" },
            list.join(", ")
        ),
    )
}

fn encode_task(task: &Task) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(&task.to_json()).expect("tasks serialize");
    bytes.push(b'\n');
    bytes
}

impl StrictStore {
    /// `list`, with the tasks as the cache holds them (shared, not copied), for answers
    /// written straight from them (`TaskStore::write_answer`).
    pub fn list_shared(&self, list: &ListName) -> Outcome<(Vec<Arc<SharedTask>>, Vec<String>)> {
        self.list_from(list, true)
    }

    /// `list`, taking a cache that starts empty from the list's index when `use_index`.
    fn list_from(
        &self,
        list: &ListName,
        use_index: bool,
    ) -> Outcome<(Vec<Arc<SharedTask>>, Vec<String>)> {
        let Some(tx) = self.begin(list.as_str(), false)? else {
            return Ok((Vec::new(), Vec::new()));
        };
        let settled = SystemTime::now()
            .checked_sub(self.list_settle)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or((0, 0), |d| {
                (d.as_secs() as i64, i64::from(d.subsec_nanos()))
            });
        let folder_st = tx.dir.stat_self().map_err(io_failure)?;
        // The field types differ between targets.
        #[allow(clippy::unnecessary_cast)]
        let folder = (folder_st.st_dev as u64, folder_st.st_ino as u64);
        let stamp = FolderStamp::of(&folder_st);
        // The mutants keep the plain reads their bugs are written against.
        let caching = self.mutant.is_none();
        let mut cache = if caching {
            self.list_cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(list.as_str())
                .filter(|c| c.folder == folder)
                .unwrap_or_default()
        } else {
            ListCache::default()
        };
        // The names in the folder: those of the last list when the folder has not changed
        // since (every create, removal or rename in it moves its change time, and names are
        // kept only from a folder whose change time had settled, as for files below);
        // otherwise read afresh.
        let mut fresh_names = false;
        let ids = match cache.names.take() {
            Some((s, ids)) if s == stamp => ids,
            _ => {
                fresh_names = true;
                let entries = tx.dir.entries().map_err(io_failure)?;
                let mut ids: Vec<TaskId> = entries
                    .iter()
                    .filter(|(_, ft)| *ft != Some(rustix::fs::FileType::Directory))
                    .filter_map(|(name, _)| LAYOUT.task_id_of(name))
                    .collect();
                ids.sort_unstable();
                ids
            }
        };
        // A process that has not listed the list yet starts from its index on disk, whose
        // every entry is still checked below as one of its own would be (see `index.rs`).
        cache.from_index = 0;
        if use_index && caching && cache.tasks.is_empty() && ids.len() >= self.list_index_min {
            self.load_index(&tx, folder, &ids, &mut cache);
        }
        // Watches prove cached files unchanged without a `stat` each (see `watch.rs`): only
        // for a list large enough for them to pay, on a local file system. Not on a list
        // that starts from the index: its files are checked by `stat` this once, and the
        // watches are placed by the next list.
        if caching
            && cache.watcher.is_none()
            && cache.from_index == 0
            && ids.len() >= self.list_watch_min
        {
            let local = tx
                .dir
                .fs_type()
                .is_ok_and(|t| watch::LOCAL_FILE_SYSTEMS.contains(&t));
            if local {
                cache.watcher = watch::Watcher::new();
            }
        }
        let drained = cache.watcher.as_mut().map(watch::Watcher::drain);
        let checks: Vec<Check<'_>> = ids
            .iter()
            .map(|id| {
                let (Some(w), Some(d)) = (&cache.watcher, &drained) else {
                    return Check::Stat;
                };
                match cache.tasks.get(id).and_then(|c| c.wd) {
                    Some(wd) if w.watches(wd, *id) => {
                        if d.overflow || d.changed.contains(id) {
                            Check::Stat
                        } else {
                            Check::Trusted
                        }
                    }
                    _ => Check::Watch(w.fd(), folder.0),
                }
            })
            .collect();
        cache.checked = checks
            .iter()
            .filter(|c| !matches!(c, Check::Trusted))
            .count();
        // The files are read and decoded in parallel: under the lock nothing of this store
        // changes them, and each read is one name relative to the held folder, never through
        // a link. Each worker reuses one read buffer; the results come back in id order.
        let tx = &tx;
        let old = &cache.tasks;
        let slots: Vec<Outcome<Listed>> = ids
            .par_iter()
            .zip(checks.par_iter())
            .with_min_len(64)
            .map_init(Vec::new, |buf, (&id, &check)| {
                if caching {
                    tx.read_listed(id, buf, old.get(&id), check, settled)
                } else {
                    Ok(match tx.read_disk_into(id, buf)? {
                        Slot::Task(t) => Listed::Read(SharedTask::new(t), None),
                        Slot::Missing => Listed::Missing,
                        Slot::Corrupt(_) => Listed::Corrupt,
                    })
                }
            })
            .collect();
        drop(checks);
        let mut tasks = Vec::with_capacity(ids.len());
        let mut corrupt = Vec::new();
        // Entries of files read afresh replace the old ones (or, when the file may not be
        // kept, remove them); a hit leaves its entry where it is.
        for (&id, listed) in ids.iter().zip(slots) {
            let task = match listed? {
                Listed::Hit(t, update) => {
                    let entry = cache.tasks.get_mut(&id).expect("a hit is cached");
                    match update {
                        WatchUpdate::Keep => {}
                        WatchUpdate::Set(wd) => {
                            entry.wd = Some(wd);
                            if let Some(w) = cache.watcher.as_mut() {
                                w.register(wd, id);
                            }
                        }
                        WatchUpdate::Clear => entry.wd = None,
                    }
                    t
                }
                Listed::Read(t, kept) => {
                    let new = kept.map(|(identity, raw)| CachedTask {
                        identity,
                        task: t.clone(),
                        raw,
                        wd: None,
                    });
                    cache.unindexed += usize::from(new.is_some());
                    let old = match new {
                        Some(c) => cache.tasks.insert(id, c),
                        None => cache.tasks.remove(&id),
                    };
                    forget_watch(&mut cache.watcher, id, old);
                    t
                }
                gone @ (Listed::Missing | Listed::Corrupt) => {
                    forget_watch(&mut cache.watcher, id, cache.tasks.remove(&id));
                    if matches!(gone, Listed::Corrupt) && !self.broken(Mutant::CorruptHidden) {
                        corrupt.push(LAYOUT.file_name(id).expect("file layout"));
                    }
                    continue;
                }
            };
            tasks.push(task);
        }
        if caching {
            // Entries of files that are gone (the name list is sorted); with the names of
            // the last list there are none.
            if fresh_names {
                let watcher = &mut cache.watcher;
                cache.tasks.retain(|id, c| {
                    let keep = ids.binary_search(id).is_ok();
                    if !keep && let (Some(w), Some(wd)) = (watcher.as_mut(), c.wd) {
                        w.forget(wd, *id);
                    }
                    keep
                });
            }
            cache.folder = folder;
            // The index is written again once the files it lacks are many for the list
            // (under the lock, without `fsync`: it is a cache; a write that fails leaves
            // the list to be read from its files).
            if ids.len() >= self.list_index_min && cache.unindexed >= (ids.len() / 16).max(32) {
                // The tasks read afresh get their JSON here, in parallel; the answer then
                // writes the same bytes.
                cache.tasks.par_iter().for_each(|(_, c)| {
                    c.task.json();
                });
                let entries = cache
                    .tasks
                    .iter()
                    .map(|(id, c)| (*id, &c.identity, &c.raw[..], c.task.json()));
                let bytes = index::encode(folder, entries);
                if tx
                    .dir
                    .write_atomic(index::INDEX_NAME, &bytes, false)
                    .is_ok()
                {
                    cache.unindexed = 0;
                }
            }
            cache.names = (stamp.ctime < settled).then_some((stamp, ids));
            self.list_cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(list.to_string(), cache);
        }
        Ok((tasks, corrupt))
    }

    /// Seeds an empty cache with the entries of the list's index (`index.rs`) for the files
    /// in `ids`, undecoded (see [`SharedTask::from_index`]). An index that cannot be read or
    /// used changes nothing.
    fn load_index(&self, tx: &Txn<'_>, folder: (u64, u64), ids: &[TaskId], cache: &mut ListCache) {
        let fits = match tx.dir.stat(index::INDEX_NAME) {
            // The field types differ between targets.
            #[allow(clippy::unnecessary_cast)]
            Ok(Some(st)) => (st.st_size as u64) <= index::MAX_INDEX_BYTES,
            _ => false,
        };
        let Some(bytes) = fits.then(|| tx.dir.read(index::INDEX_NAME).ok()).flatten() else {
            return;
        };
        let Some(entries) = index::decode(&bytes, folder, |id| ids.binary_search(&id).is_ok())
        else {
            return;
        };
        cache.tasks.extend(entries.into_iter().map(|e| {
            let cached = CachedTask {
                identity: e.identity,
                task: SharedTask::from_index(e.id, e.raw.clone(), e.json),
                raw: e.raw,
                wd: None,
            };
            (e.id, cached)
        }));
        cache.from_index = cache.tasks.len();
    }

    /// Forgets what `list` keeps of `list`, in memory and on disk: its index held a task
    /// that does not decode from its own bytes, so it was not written by this store.
    fn forget_list(&self, list: &ListName) -> Outcome<()> {
        self.list_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(list.as_str());
        let Some(tx) = self.begin(list.as_str(), false)? else {
            return Ok(());
        };
        tx.dir.remove(index::INDEX_NAME).map_err(io_failure)?;
        Ok(())
    }

    /// Answers one raw request line as [`TaskStore::handle_line`] does, writing the answer's
    /// JSON (one line, without its newline) to `out`. A `list` answer is written from the
    /// tasks the cache shares, each task's JSON made once and kept with it, after the list's
    /// lock is released.
    fn write_answer_line(&self, line: &str, out: &mut Vec<u8>) {
        let request = match serde_json::from_str::<Value>(line) {
            Ok(v) if self.mutant.is_none() => Request::from_json(&v),
            // The mutants answer through `handle_value`, which some of them replace.
            Ok(v) => return self.handle_value(&v).write_json(out),
            Err(_) => return self.handle_line(line).write_json(out),
        };
        match request {
            Ok(Request::List { list }) => {
                match super::audit::with_op(crate::protocol::Op::List, || self.list_shared(&list)) {
                    Ok((tasks, corrupt)) => write_tasks_answer(&tasks, &corrupt, out),
                    Err(f) => Response::Error(f).write_json(out),
                }
            }
            Ok(req) => self.handle(&req).write_json(out),
            Err(e) => Response::Error(e.into()).write_json(out),
        }
    }
}

/// Drops the watch of a cache entry that was replaced or removed.
fn forget_watch(watcher: &mut Option<watch::Watcher>, id: TaskId, old: Option<CachedTask>) {
    if let (Some(w), Some(CachedTask { wd: Some(wd), .. })) = (watcher.as_mut(), old) {
        w.forget(wd, id);
    }
}

/// `{"ok":true,"tasks":[...],"corrupt":[...]}`, the bytes `Response::write_json` gives for
/// the same answer, from the shared tasks' kept JSON (made in parallel where missing).
fn write_tasks_answer(tasks: &[Arc<SharedTask>], corrupt: &[String], out: &mut Vec<u8>) {
    tasks.par_iter().with_min_len(256).for_each(|t| {
        t.json();
    });
    let size: usize = tasks.iter().map(|t| t.json().len() + 1).sum();
    out.reserve(size + 64);
    out.extend_from_slice(b"{\"ok\":true,\"tasks\":[");
    for (i, t) in tasks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(t.json());
    }
    out.extend_from_slice(b"],\"corrupt\":");
    serde_json::to_writer(&mut *out, corrupt).expect("names serialize");
    out.push(b'}');
}

impl StrictStore {
    /// Answers `request` on behalf of `actor`, whom the audit log records.
    pub fn handle_as(&self, request: &Request, actor: &str) -> Response {
        super::audit::with_actor(actor, || self.handle(request))
    }
}

impl TaskStore for StrictStore {
    fn hello(&self) -> Hello {
        Hello {
            protocol: PROTOCOL_VERSION,
            name: match self.mutant {
                None => "taskproof-reference".into(),
                Some(m) => format!("taskproof-mutant-{m}"),
            },
            version: env!("CARGO_PKG_VERSION").into(),
            layout: LAYOUT,
            features: Feature::OF_A_STORE.into_iter().collect(),
            mapping: Default::default(),
        }
    }

    fn handle(&self, request: &Request) -> Response {
        super::audit::with_op(request.op(), || super::answer(self, request))
    }

    fn write_answer(&self, line: &str, out: &mut Vec<u8>) {
        self.write_answer_line(line, out)
    }

    fn handle_value(&self, v: &Value) -> Response {
        if self.broken(Mutant::EscapesRoot) {
            return self.handle_unchecked_list(v);
        }
        match Request::from_json(v) {
            Ok(req) => self.handle(&req),
            Err(e) => Response::Error(e.into()),
        }
    }
}

impl StrictStore {
    /// The `escapes-root` mutant's request decoding: any list string is taken as a name.
    fn handle_unchecked_list(&self, v: &Value) -> Response {
        let mut v = v.clone();
        let raw = v.get("list").and_then(Value::as_str).map(str::to_string);
        let Some(raw) = raw.filter(|r| r.parse::<ListName>().is_err() && !r.is_empty()) else {
            return match Request::from_json(&v) {
                Ok(req) => self.handle(&req),
                Err(e) => Response::Error(e.into()),
            };
        };
        v["list"] = Value::String("placeholder".into());
        let req = match Request::from_json(&v) {
            Ok(r) => r,
            Err(e) => return Response::Error(e.into()),
        };
        let fake = ListName::unchecked(raw.clone());
        let req = match req {
            Request::Create { task, .. } => Request::Create { list: fake, task },
            Request::Get { id, .. } => Request::Get { list: fake, id },
            Request::Update { id, patch, .. } => Request::Update {
                list: fake,
                id,
                patch,
            },
            Request::Delete { id, .. } => Request::Delete { list: fake, id },
            Request::List { .. } => Request::List { list: fake },
            Request::Claim { id, owner, .. } => Request::Claim {
                list: fake,
                id,
                owner,
            },
            Request::Hello => Request::Hello,
        };
        self.handle(&req)
    }
}

mod index;
mod pretty;
mod txn;
mod watch;

pub use index::INDEX_NAME as LIST_INDEX_NAME;
pub use txn::SharedTask;
use txn::{CachedTask, Check, FolderStamp, ListCache, Listed, Slot, Txn, WatchUpdate};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use txn::{FileIdentity, TASK_CNAME_LEN, task_cname};

    fn list_of(store: &StrictStore) -> Vec<Task> {
        match store.handle_value(&json!({"op": "list", "list": "l"})) {
            Response::Tasks { tasks, .. } => tasks,
            other => panic!("list: {other:?}"),
        }
    }

    #[test]
    fn watermarks_are_whole_numbers_with_blanks_and_a_cut_short_tail_allowed() {
        assert_eq!(parse_watermark(b"12\n"), Some(12));
        assert_eq!(parse_watermark(b" 12 "), Some(12));
        assert_eq!(parse_watermark(b"9\n\0"), Some(9));
        assert_eq!(parse_watermark(b"9\0\0"), Some(9));
        for bad in [&b""[..], b"\0\0", b"x", b"-1", b"1.5", b"\x001", b"\xff"] {
            assert_eq!(parse_watermark(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn list_never_answers_from_its_cache_for_a_file_that_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut store = StrictStore::open(tmp.path(), Options { durable: false }).unwrap();
        // Cache every file at once, however recent, to see that the checks of a cached entry
        // (inode, size, change time) catch each kind of change.
        store.list_settle = Duration::ZERO;
        for s in ["a", "b", "c"] {
            let r =
                store.handle_value(&json!({"op": "create", "list": "l", "task": {"subject": s}}));
            assert!(r.is_ok(), "{r:?}");
        }
        assert_eq!(list_of(&store).len(), 3);
        assert_eq!(store.list_cache.lock().unwrap()["l"].tasks.len(), 3);
        let folder = tmp.path().join("l");
        // Rewritten in place by another program (same inode, other size).
        std::fs::write(
            folder.join("1.json"),
            json!({"id": "1", "subject": "changed in place", "status": "pending"}).to_string(),
        )
        .unwrap();
        // Replaced by a rename (another inode).
        std::fs::write(
            folder.join("x"),
            json!({"id": "2", "subject": "B", "status": "pending"}).to_string(),
        )
        .unwrap();
        std::fs::rename(folder.join("x"), folder.join("2.json")).unwrap();
        // Replaced by a link: never followed, named as corrupt.
        std::fs::remove_file(folder.join("3.json")).unwrap();
        std::os::unix::fs::symlink(folder.join("1.json"), folder.join("3.json")).unwrap();
        let r = store.handle_value(&json!({"op": "list", "list": "l"}));
        let Response::Tasks { tasks, corrupt } = r else {
            panic!("{r:?}")
        };
        let subjects: Vec<&str> = tasks.iter().map(|t| t.subject.as_str()).collect();
        assert_eq!(subjects, ["changed in place", "B"]);
        assert_eq!(corrupt, ["3.json"]);
        // An update by this store is seen too (a new inode).
        let r = store.handle_value(
            &json!({"op": "update", "list": "l", "id": "2", "patch": {"subject": "again"}}),
        );
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(list_of(&store)[1].subject, "again");
    }

    #[test]
    fn task_cnames_are_the_layouts_file_names() {
        let mut buf = [0; TASK_CNAME_LEN];
        for id in [0, 1, 9, 10, 12345, u64::MAX] {
            let name = task_cname(TaskId(id), &mut buf)
                .to_str()
                .unwrap()
                .to_string();
            assert_eq!(Some(name), LAYOUT.file_name(TaskId(id)));
        }
    }

    /// Runs `script` in `sh` in `dir`: a change made by another process.
    fn other_process(dir: &Path, script: &str) {
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(st.success(), "{script}: {st}");
    }

    #[test]
    fn list_sees_changes_by_another_process_when_it_keeps_the_folders_names() {
        let tmp = tempfile::tempdir().unwrap();
        let mut store = StrictStore::open(tmp.path(), Options { durable: false }).unwrap();
        // Anything older than 20 ms counts as settled, and everything below waits 100 ms
        // after its last change, so every file and the folder's names are kept.
        store.list_settle = Duration::from_millis(20);
        let settle = || std::thread::sleep(Duration::from_millis(100));
        for s in ["a", "b", "c"] {
            let r =
                store.handle_value(&json!({"op": "create", "list": "l", "task": {"subject": s}}));
            assert!(r.is_ok(), "{r:?}");
        }
        settle();
        assert_eq!(list_of(&store).len(), 3);
        {
            let caches = store.list_cache.lock().unwrap();
            assert_eq!(caches["l"].tasks.len(), 3);
            assert!(caches["l"].names.is_some(), "the folder's names are kept");
        }
        let folder = tmp.path().join("l");
        // Another process adds a task file: the folder changed, its names are read again.
        other_process(
            &folder,
            r#"printf '{"id":"4","subject":"d","status":"pending"}' > 4.json"#,
        );
        let subjects =
            |tasks: Vec<Task>| -> Vec<String> { tasks.into_iter().map(|t| t.subject).collect() };
        assert_eq!(subjects(list_of(&store)), ["a", "b", "c", "d"]);
        settle();
        list_of(&store);
        // Another process rewrites a kept file in place with the same number of bytes:
        // same inode, same size, a new change time.
        let before = std::fs::read_to_string(folder.join("2.json")).unwrap();
        let after = before.replace("\"b\"", "\"B\"");
        assert_eq!(before.len(), after.len());
        std::fs::write(tmp.path().join("new"), &after).unwrap();
        other_process(&folder, "cat ../new > 2.json");
        assert_eq!(subjects(list_of(&store)), ["a", "B", "c", "d"]);
        settle();
        list_of(&store);
        // Another process removes one file and renames another over a third.
        other_process(&folder, "rm 1.json && mv 4.json 3.json");
        let r = store.handle_value(&json!({"op": "list", "list": "l"}));
        let Response::Tasks { tasks, corrupt } = r else {
            panic!("{r:?}")
        };
        // 3.json now holds id 4: not a task of that name.
        assert_eq!(subjects(tasks), ["B"]);
        assert_eq!(corrupt, ["3.json"]);
    }

    /// A store whose every list is watched and whose files settle after 20 ms, with tasks
    /// a, b, c created and settled.
    fn watched_store(tmp: &Path) -> StrictStore {
        let mut store = StrictStore::open(tmp, Options { durable: false }).unwrap();
        store.list_settle = Duration::from_millis(20);
        store.list_watch_min = 0;
        for s in ["a", "b", "c"] {
            let r =
                store.handle_value(&json!({"op": "create", "list": "l", "task": {"subject": s}}));
            assert!(r.is_ok(), "{r:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
        store
    }

    fn checked(store: &StrictStore) -> usize {
        store.list_cache.lock().unwrap()["l"].checked
    }

    fn subjects(store: &StrictStore) -> Vec<String> {
        list_of(store).into_iter().map(|t| t.subject).collect()
    }

    #[test]
    fn a_watched_list_checks_no_file_until_one_changes_and_then_sees_the_change() {
        let tmp = tempfile::tempdir().unwrap();
        let store = watched_store(tmp.path());
        if !local_fs(tmp.path()) {
            eprintln!("skipped: the temporary folder is not on a local file system");
            return;
        }
        let settle = || std::thread::sleep(Duration::from_millis(100));
        // The first list reads every file, the second places the watches, the third needs
        // no system call per file.
        assert_eq!(subjects(&store), ["a", "b", "c"]);
        assert_eq!(checked(&store), 3);
        assert_eq!(subjects(&store), ["a", "b", "c"]);
        assert_eq!(checked(&store), 3);
        assert_eq!(subjects(&store), ["a", "b", "c"]);
        assert_eq!(checked(&store), 0, "nothing changed, nothing checked");
        let folder = tmp.path().join("l");
        // Another process rewrites a file in place with as many bytes: the folder does not
        // change, the watch does.
        let before = std::fs::read_to_string(folder.join("2.json")).unwrap();
        let after = before.replace("\"b\"", "\"B\"");
        assert_eq!(before.len(), after.len());
        std::fs::write(tmp.path().join("new"), &after).unwrap();
        other_process(&folder, "cat ../new > 2.json");
        assert_eq!(subjects(&store), ["a", "B", "c"]);
        assert_eq!(checked(&store), 1, "only the changed file is checked");
        quiet(&store);
        assert_eq!(subjects(&store), ["a", "B", "c"]);
        // A hard link made in another folder after the watch was placed, and a write in
        // place through it: the watch is on the inode, not on the name.
        std::fs::create_dir(tmp.path().join("elsewhere")).unwrap();
        other_process(&folder, "ln 3.json ../elsewhere/x");
        let before = std::fs::read_to_string(folder.join("3.json")).unwrap();
        let after = before.replace("\"c\"", "\"C\"");
        std::fs::write(tmp.path().join("new"), &after).unwrap();
        other_process(&folder, "cat ../new > ../elsewhere/x");
        assert_eq!(subjects(&store), ["a", "B", "C"]);
        // A file with a second name is never trusted to its watch.
        settle();
        for _ in 0..3 {
            assert_eq!(subjects(&store), ["a", "B", "C"]);
        }
        assert_eq!(
            checked(&store),
            1,
            "3.json has two names: checked every time"
        );
        other_process(&folder, "rm ../elsewhere/x");
        quiet(&store);
        // Truncated in place by another process.
        other_process(&folder, ": > 1.json");
        let r = store.handle_value(&json!({"op": "list", "list": "l"}));
        let Response::Tasks { tasks, corrupt } = r else {
            panic!("{r:?}")
        };
        assert_eq!(tasks.len(), 2);
        assert_eq!(corrupt, ["1.json"]);
        other_process(&folder, "rm 1.json");
        quiet(&store);
        // A change of mode only: checked again, and still the same task.
        other_process(&folder, "chmod 600 2.json");
        assert_eq!(subjects(&store), ["B", "C"]);
        assert_eq!(checked(&store), 1);
        // Changes by this store are seen as before.
        let r = store.handle_value(
            &json!({"op": "update", "list": "l", "id": "2", "patch": {"subject": "again"}}),
        );
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(subjects(&store), ["again", "C"]);
    }

    /// A store with its index used from the first task on, files settling after 20 ms: as a
    /// new process would open it (nothing in memory).
    fn indexed_store(tmp: &Path) -> StrictStore {
        let mut store = StrictStore::open(tmp, Options { durable: false }).unwrap();
        store.list_settle = Duration::from_millis(20);
        store.list_index_min = 0;
        store
    }

    fn from_index(store: &StrictStore) -> usize {
        store.list_cache.lock().unwrap()["l"].from_index
    }

    #[test]
    fn a_new_store_lists_from_the_index_and_still_sees_every_change() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = tmp.path().join("l");
        let writer = indexed_store(tmp.path());
        for i in 0..40 {
            let r = writer.handle_value(
                &json!({"op": "create", "list": "l", "task": {"subject": format!("t{i:02}")}}),
            );
            assert!(r.is_ok(), "{r:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
        let all: Vec<String> = (0..40).map(|i| format!("t{i:02}")).collect();
        // The first list reads the files and writes the index; a new store takes every
        // file from it, answers the same, and writes nothing more.
        assert_eq!(subjects(&writer), all);
        assert!(folder.join(index::INDEX_NAME).exists());
        let reader = indexed_store(tmp.path());
        assert_eq!(list_of(&reader), list_of(&writer));
        assert_eq!(from_index(&reader), 40);
        let shared = reader.list_shared(&"l".parse().unwrap()).unwrap().0;
        let answer: Vec<u8> = shared.iter().flat_map(|t| t.json().to_vec()).collect();
        let decoded: Vec<u8> = list_of(&writer)
            .iter()
            .flat_map(|t| serde_json::to_vec(t).unwrap())
            .collect();
        assert_eq!(
            answer, decoded,
            "answers from the index are the tasks' JSON"
        );
        // Another process rewrites a file in place with as many bytes, removes one, and
        // writes one anew: a new store still takes the others from the index.
        let before = std::fs::read_to_string(folder.join("2.json")).unwrap();
        let after = before.replace("\"t01\"", "\"T01\"");
        assert_eq!(before.len(), after.len());
        std::fs::write(tmp.path().join("new"), &after).unwrap();
        other_process(&folder, "cat ../new > 2.json && rm 3.json");
        other_process(
            &folder,
            r#"printf '{"id":"41","subject":"new","status":"pending"}' > 41.json"#,
        );
        let mut expected = all.clone();
        expected[1] = "T01".into();
        expected.remove(2);
        expected.push("new".into());
        let fresh = indexed_store(tmp.path());
        assert_eq!(subjects(&fresh), expected);
        assert_eq!(
            from_index(&fresh),
            39,
            "the index holds 39 of the files still there"
        );
        // A change made right after the index was read is seen by the next list as well.
        other_process(&folder, "rm 4.json");
        expected.remove(2);
        assert_eq!(subjects(&fresh), expected);
        // An index moved in with a copy of the list is another folder's: not used.
        other_process(tmp.path(), "cp -a l copy");
        let r = fresh.handle_value(&json!({"op": "list", "list": "copy"}));
        let Response::Tasks { tasks, .. } = r else {
            panic!("{r:?}")
        };
        assert_eq!(tasks.len(), expected.len());
        assert_eq!(fresh.list_cache.lock().unwrap()["copy"].from_index, 0);
    }

    #[test]
    fn an_index_whose_tasks_do_not_decode_is_dropped_and_the_files_read() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = tmp.path().join("l");
        let store = indexed_store(tmp.path());
        for s in ["a", "b"] {
            let r =
                store.handle_value(&json!({"op": "create", "list": "l", "task": {"subject": s}}));
            assert!(r.is_ok(), "{r:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(subjects(&store), ["a", "b"]);
        // An index not written by this store: the right identities and a valid checksum,
        // but bytes that are not task 1.
        let mut entries = Vec::new();
        for id in [1u64, 2] {
            let st = rustix::fs::stat(folder.join(format!("{id}.json"))).unwrap();
            let raw = if id == 1 {
                vec![b'x'; st.st_size as usize]
            } else {
                std::fs::read(folder.join("2.json")).unwrap()
            };
            entries.push((TaskId(id), FileIdentity::of(&st), raw));
        }
        let st = rustix::fs::stat(&folder).unwrap();
        #[allow(clippy::unnecessary_cast)]
        let folder_id = (st.st_dev as u64, st.st_ino as u64);
        let bytes = index::encode(
            folder_id,
            entries
                .iter()
                .map(|(id, ident, raw)| (*id, ident, &raw[..], &b"{}"[..])),
        );
        std::fs::write(folder.join(index::INDEX_NAME), bytes).unwrap();
        let fresh = indexed_store(tmp.path());
        assert_eq!(subjects(&fresh), ["a", "b"]);
        assert!(
            !folder.join(index::INDEX_NAME).exists(),
            "the index is dropped"
        );
    }

    /// Lets every file settle and lists until no file needs a check (at most three lists:
    /// one reads a changed file, one places its watch).
    fn quiet(store: &StrictStore) {
        std::thread::sleep(Duration::from_millis(100));
        for _ in 0..3 {
            subjects(store);
            if checked(store) == 0 {
                return;
            }
        }
        panic!("still {} files checked after three lists", checked(store));
    }

    fn local_fs(p: &Path) -> bool {
        rustix::fs::statfs(p).is_ok_and(|s| watch::LOCAL_FILE_SYSTEMS.contains(&(s.f_type as u64)))
    }

    #[test]
    fn a_list_answer_is_written_as_the_response_would_be() {
        let tmp = tempfile::tempdir().unwrap();
        let store = watched_store(tmp.path());
        let r = store.handle_value(&json!({"op": "update", "list": "l", "id": "2", "patch": {
            "subject": "ünï \u{1F600} \"q\" \\", "owner": "\u{3b1}",
            "metadata": {"deep": {"x": [1, 2.5, null, {"y": "\n"}]}, "n": -0.0}
        }}));
        assert!(r.is_ok(), "{r:?}");
        let folder = tmp.path().join("l");
        std::fs::write(folder.join("7.json"), "not json").unwrap();
        std::fs::write(
            folder.join("8.json"),
            r#"{"id":"8","subject":"s","status":"pending","unknown":{"kept":[1,"x"]},"blocks":["3","3"]}"#,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let line = r#"{"op":"list","list":"l"}"#;
        // Cold, warm, and with watches placed: the same bytes as the response's JSON.
        for _ in 0..3 {
            let mut written = Vec::new();
            store.write_answer(line, &mut written);
            let expected = serde_json::to_vec(&store.handle_line(line).to_json()).unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
        // Other requests and bad lines too.
        for line in [
            r#"{"op":"get","list":"l","id":"2"}"#,
            r#"{"op":"list","list":"nothing-here"}"#,
            r#"{"op":"list","list":"../x"}"#,
            r#"{"op":"hello"}"#,
            "not json",
        ] {
            let mut written = Vec::new();
            store.write_answer(line, &mut written);
            let expected = serde_json::to_vec(&store.handle_line(line).to_json()).unwrap();
            assert_eq!(written, expected, "{line}");
        }
    }

    #[test]
    fn list_caches_only_files_that_have_settled() {
        let tmp = tempfile::tempdir().unwrap();
        let store = StrictStore::open(tmp.path(), Options { durable: false }).unwrap();
        let r = store.handle_value(&json!({"op": "create", "list": "l", "task": {"subject": "a"}}));
        assert!(r.is_ok(), "{r:?}");
        list_of(&store);
        // Written just now: a change in place within the same clock tick would keep its
        // change time, so it is read again next time rather than kept.
        assert!(store.list_cache.lock().unwrap()["l"].tasks.is_empty());
    }
}
