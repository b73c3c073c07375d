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
use std::sync::Mutex;
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
/// without fsync (see [`Dir::write_exchange`]); it holds an older value and is never read.
pub const HIGHWATERMARK_SCRATCH_NAME: &str = ".highwatermark.next";
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
            tx.persist_watermark()?;
        }
        tx.commit()
    }

    fn list(&self, list: &ListName) -> Outcome<(Vec<Task>, Vec<String>)> {
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
        // The files are read and decoded in parallel: under the lock nothing of this store
        // changes them, and each read is one name relative to the held folder, never through
        // a link. Each worker reuses one read buffer; the results come back in id order.
        let tx = &tx;
        let old = &cache.tasks;
        let slots: Vec<Outcome<Listed>> = ids
            .par_iter()
            .with_min_len(64)
            .map_init(Vec::new, |buf, &id| {
                if caching {
                    tx.read_listed(id, buf, old.get(&id), settled)
                } else {
                    tx.read_disk_into(id, buf).map(|s| Listed::Read(s, None))
                }
            })
            .collect();
        let mut tasks = Vec::with_capacity(ids.len());
        let mut corrupt = Vec::new();
        // Entries of files read afresh replace the old ones (or, when the file may not be
        // kept, remove them); a hit leaves its entry where it is.
        for (&id, listed) in ids.iter().zip(slots) {
            let slot = match listed? {
                Listed::Hit(t) => Slot::Task(t),
                Listed::Read(slot, entry) => {
                    match entry {
                        Some(c) => {
                            cache.tasks.insert(id, c);
                        }
                        None => {
                            cache.tasks.remove(&id);
                        }
                    }
                    slot
                }
            };
            match slot {
                Slot::Task(t) => tasks.push(t),
                Slot::Missing => {}
                Slot::Corrupt(_) if self.broken(Mutant::CorruptHidden) => {}
                Slot::Corrupt(_) => corrupt.push(LAYOUT.file_name(id).expect("file layout")),
            }
        }
        if caching {
            // Entries of files that are gone (the name list is sorted); with the names of
            // the last list there are none.
            if fresh_names {
                cache.tasks.retain(|id, _| ids.binary_search(id).is_ok());
            }
            cache.folder = folder;
            cache.names = (stamp.ctime < settled).then_some((stamp, ids));
            self.list_cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(list.to_string(), cache);
        }
        Ok((tasks, corrupt))
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
            features: Feature::ALL.into_iter().collect(),
            mapping: Default::default(),
        }
    }

    fn handle(&self, request: &Request) -> Response {
        super::audit::with_op(request.op(), || super::answer(self, request))
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

/// What a read of one task found.
// Slots live in a per-operation cache of a handful of tasks; boxing would only add
// allocations.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
enum Slot {
    Task(Task),
    Missing,
    Corrupt(String),
}

/// One operation on one list, under its lock: reads go through a cache, changes into an
/// overlay, and nothing reaches the disk until [`Txn::commit`].
struct Txn<'a> {
    store: &'a StrictStore,
    dir: Dir,
    list: String,
    /// Held for the whole operation; `None` only in the `no-lock` mutant.
    _lock: Option<LockGuard>,
    cache: HashMap<TaskId, Slot>,
    /// Tasks written (`Some`) or removed (`None`) by this operation.
    overlay: BTreeMap<TaskId, Option<Task>>,
    /// Claude Code's list lock, when a create holds it from choosing the id on.
    cc_list: Option<super::cclock::CcLock>,
}

impl Txn<'_> {
    fn file_name(id: TaskId) -> String {
        LAYOUT.file_name(id).expect("file layout")
    }

    fn read_disk(&self, id: TaskId) -> Outcome<Slot> {
        self.read_disk_into(id, &mut Vec::new())
    }

    /// Reads and decodes the task file of `id`, using `buf` for the bytes.
    fn read_disk_into(&self, id: TaskId, buf: &mut Vec<u8>) -> Outcome<Slot> {
        self.read_disk_stat(id, buf).map(|(slot, _)| slot)
    }

    /// As [`Txn::read_disk_into`], with the status of the regular file that was read.
    fn read_disk_stat(
        &self,
        id: TaskId,
        buf: &mut Vec<u8>,
    ) -> Outcome<(Slot, Option<rustix::fs::Stat>)> {
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

    fn decode(&self, id: TaskId, name: &str, bytes: &[u8]) -> Slot {
        let value: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => return Slot::Corrupt(format!("{name} is not valid JSON: {e}")),
        };
        match Task::from_json(&value, self.store.strictness()) {
            Ok(t) if t.id == id => Slot::Task(t),
            Ok(t) => Slot::Corrupt(format!(
                "{name} holds id {:?}, which does not match its name",
                t.id.to_string()
            )),
            Err(e) => Slot::Corrupt(format!("{name}: {e}")),
        }
    }

    /// Reads task `id` for `list`: from `cached` when the file is still the one it was
    /// decoded from (same inode, size and change time: one `fstatat`, never through a
    /// link), otherwise from disk, returning a new cache entry when the file has settled.
    fn read_listed(
        &self,
        id: TaskId,
        buf: &mut Vec<u8>,
        cached: Option<&CachedTask>,
        settled: (i64, i64),
    ) -> Outcome<Listed> {
        if let Some(c) = cached {
            let mut name = [0; TASK_CNAME_LEN];
            match self.dir.stat_c(task_cname(id, &mut name)) {
                Ok(Some(st)) if c.identity == FileIdentity::of(&st) => {
                    return Ok(Listed::Hit(c.task.clone()));
                }
                Ok(_) => {}
                Err(e) => return Err(io_failure(format!("{}: {e}", Self::file_name(id)))),
            }
        }
        let (slot, stat) = self.read_disk_stat(id, buf)?;
        let keep = match (&slot, stat) {
            (Slot::Task(t), Some(st)) => {
                let identity = FileIdentity::of(&st);
                (identity.ctime < settled).then(|| CachedTask {
                    identity,
                    task: t.clone(),
                })
            }
            _ => None,
        };
        Ok(Listed::Read(slot, keep))
    }
}

/// What identifies one version of a file the store never rewrites in place: every write of
/// the store makes a new inode (rename), and a foreign write in place changes the size or
/// the change time, which only the kernel sets (unlike the modification time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    dev: u64,
    ino: u64,
    size: i64,
    ctime: (i64, i64),
}

impl FileIdentity {
    // The field types differ between targets.
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &rustix::fs::Stat) -> FileIdentity {
        FileIdentity {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as i64,
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }
}

/// Room for `{id}.json` and its NUL for any `u64` id.
const TASK_CNAME_LEN: usize = 32;

/// The file name of task `id` in the `claude-code` layout (`{id}.json`), written into `buf`
/// as a C string: `list` checks every cached file by name, and building each name on the
/// stack spares an allocation per file.
fn task_cname(id: TaskId, buf: &mut [u8; TASK_CNAME_LEN]) -> &std::ffi::CStr {
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
struct FolderStamp {
    mtime: (i64, i64),
    ctime: (i64, i64),
    size: i64,
}

impl FolderStamp {
    // The field types differ between targets.
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &rustix::fs::Stat) -> FolderStamp {
        FolderStamp {
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
            size: st.st_size as i64,
        }
    }
}

/// A task `list` decoded, with the identity of the file it came from.
struct CachedTask {
    identity: FileIdentity,
    task: Task,
}

/// What `list` keeps of a list between calls.
#[derive(Default)]
struct ListCache {
    /// The folder's device and inode: a folder replaced since is read afresh.
    folder: (u64, u64),
    /// The task ids found in the folder, sorted, with the folder's stamp when they were
    /// read; kept only when the folder had not changed for [`LIST_SETTLE`].
    names: Option<(FolderStamp, Vec<TaskId>)>,
    tasks: HashMap<TaskId, CachedTask>,
}

/// One task file as `list` got it.
// One per listed file, moved once into the answer; boxing would add an allocation each.
#[allow(clippy::large_enum_variant)]
enum Listed {
    /// Unchanged since it was cached.
    Hit(Task),
    /// Read from disk, with a new cache entry when it may be kept.
    Read(Slot, Option<CachedTask>),
}

impl Txn<'_> {
    /// The task `id` as this operation sees it (its own changes included).
    fn slot(&mut self, id: TaskId) -> Outcome<Slot> {
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
    fn task(&mut self, id: TaskId) -> Outcome<Task> {
        match self.slot(id)? {
            Slot::Task(t) => Ok(t),
            Slot::Missing => Err(Failure::new(
                ErrorKind::NotFound,
                format!("no task {id} in list {}", self.list),
            )),
            Slot::Corrupt(why) => Err(Failure::new(ErrorKind::Corrupt, why)),
        }
    }

    fn put(&mut self, task: Task) {
        self.overlay.insert(task.id, Some(task));
    }

    fn edges_of(&mut self, id: TaskId) -> Outcome<(BTreeSet<TaskId>, BTreeSet<TaskId>)> {
        Ok(match self.slot(id)? {
            Slot::Task(t) => (t.blocks, t.blocked_by),
            _ => Default::default(),
        })
    }

    /// Blockers of `task` that are not completed. A missing blocker does not block; an
    /// unreadable one does, since nobody can tell that it finished.
    fn unfinished_blockers(&mut self, task: &Task) -> Outcome<Vec<TaskId>> {
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
    fn path(&mut self, start: TaskId, goal: TaskId) -> Outcome<Option<Vec<TaskId>>> {
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
    fn add_edge(&mut self, from: TaskId, to: TaskId, me: TaskId) -> Outcome<()> {
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
    fn remove_edge(&mut self, from: TaskId, to: TaskId, me: TaskId) -> Outcome<()> {
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

    fn change_status(&mut self, id: TaskId, status: &Status) -> Outcome<()> {
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
    fn next_id(&mut self) -> Outcome<TaskId> {
        let store = self.store;
        let highest_on_disk = |dir: &Dir| -> Outcome<u64> {
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
    fn write_file(&self, name: &str, bytes: Vec<u8>) -> Outcome<()> {
        let s = self.store;
        let r = if s.broken(Mutant::TruncateWrite) || s.broken(Mutant::FollowsSymlinks) {
            self.dir.write_in_place(name, &bytes)
        } else if s.broken(Mutant::NoLock) {
            self.dir.write_atomic_unlocked(name, &bytes)
        } else {
            self.dir.write_atomic(name, &bytes, s.options.durable)
        };
        r.map_err(|e| io_failure(format!("{name}: {e}")))
    }

    /// Records `id` as the highest id assigned, on its own (never in the journal), before the
    /// task it names is written.
    ///
    /// Without fsync the new value goes into the scratch file, which is exchanged with the
    /// watermark in one rename: no inode is created or freed. With fsync it is a whole-file
    /// write through `.tmp` whose data is not synced on its own: the rename is made durable by
    /// the folder sync that makes the new task durable, so a create costs the two sync rounds
    /// of the task's write. After a power cut the watermark may then be empty or its rename
    /// lost; that is safe because every acknowledged task that still exists is on disk (an
    /// unreadable watermark falls back to the highest task file, and `next_id` steps past
    /// every file that exists), and a delete first syncs the watermark
    /// ([`Txn::persist_watermark`]), so the id of a deleted task is always below a watermark
    /// that survives.
    fn write_watermark(&self, id: TaskId) -> Outcome<()> {
        let s = self.store;
        let bytes = format!("{id}\n").into_bytes();
        if s.broken(Mutant::TruncateWrite)
            || s.broken(Mutant::FollowsSymlinks)
            || s.broken(Mutant::NoLock)
        {
            return self.write_file(HIGHWATERMARK_NAME, bytes);
        }
        let r = if s.options.durable {
            self.dir.write_atomic(HIGHWATERMARK_NAME, &bytes, false)
        } else {
            self.dir
                .write_exchange(HIGHWATERMARK_NAME, HIGHWATERMARK_SCRATCH_NAME, &bytes)
        };
        r.map_err(|e| io_failure(format!("{HIGHWATERMARK_NAME}: {e}")))
    }

    /// Before a durable delete: makes sure the watermark on disk covers every id assigned so
    /// far, so that the deleted task's id survives a power cut in the watermark (creates do
    /// not sync it; see [`Txn::write_watermark`]). A readable watermark is synced; an
    /// unreadable or missing one is written whole and synced.
    fn persist_watermark(&mut self) -> Outcome<()> {
        let readable = self.read_watermark()?.is_some();
        if readable && self.dir.sync_file(HIGHWATERMARK_NAME).map_err(io_failure)? {
            return Ok(());
        }
        let highest = self.next_id()?.get() - 1;
        self.dir
            .write_atomic(HIGHWATERMARK_NAME, format!("{highest}\n").as_bytes(), true)
            .map_err(|e| io_failure(format!("{HIGHWATERMARK_NAME}: {e}")))
    }

    /// The watermark's value; `None` when it is missing, a link, or not a number.
    fn read_watermark(&self) -> Outcome<Option<u64>> {
        let mut buf = Vec::with_capacity(24);
        match self.dir.read_into(HIGHWATERMARK_NAME, &mut buf) {
            Ok(_) => Ok(std::str::from_utf8(&buf)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())),
            Err(ReadError::Io(e)) => Err(io_failure(e)),
            Err(_) => Ok(None),
        }
    }

    /// The audit record of this operation's changes, when the list is audited and something
    /// changed.
    fn audit_record(&self) -> Outcome<Option<Vec<u8>>> {
        if !self.store.audit && !super::audit::is_audited(&self.dir).map_err(io_failure)? {
            return Ok(None);
        }
        let changes: Vec<super::audit::Changed> = self
            .overlay
            .iter()
            .map(|(id, after)| super::audit::Changed {
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
        Ok(Some(super::audit::record(&self.list, &changes)))
    }

    /// Writes every changed task, atomically as a group.
    fn commit(&mut self) -> Outcome<()> {
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
            || s.broken(Mutant::NoLock)
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
                    super::cclock::lock_change(&self.dir, self.cc_list.take(), names)
                        .map_err(io_failure)?,
                )
            } else {
                None
            };
            if let Some(line) = self.audit_record()? {
                super::audit::commit(&self.dir, &entries, &line, s.options.durable)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list_of(store: &StrictStore) -> Vec<Task> {
        match store.handle_value(&json!({"op": "list", "list": "l"})) {
            Response::Tasks { tasks, .. } => tasks,
            other => panic!("list: {other:?}"),
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
