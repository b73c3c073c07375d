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
//! tasks reachable from it. Only `list` reads the whole folder, and keeps what it read
//! between calls ([`listing`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::fsys::{Dir, LOCK_NAME, LockGuard, ReadError};
use crate::journal::{self, Entry};
use crate::mutant::Mutant;
use crate::{Options, TaskStore};
use taskproof_core::protocol::{
    ErrorKind, Failure, Feature, Hello, Layout, OpResult, PROTOCOL_VERSION, Request, Response,
};
use taskproof_core::task::{
    Change, ListName, NewTask, Patch, Status, Strictness, Task, TaskId, json_depth,
};

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
    fn begin(&self, list: &str, create: bool) -> OpResult<Option<Txn<'_>>> {
        self.begin_locking(list, create, !self.broken(Mutant::NoLock))
    }

    /// [`Self::begin`], taking the lock only when `lock` (the mutants that skip it).
    fn begin_locking(&self, list: &str, create: bool, lock: bool) -> OpResult<Option<Txn<'_>>> {
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
        let lock = if !lock {
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
            lock,
            cache: HashMap::new(),
            overlay: BTreeMap::new(),
            cc_list: None,
        }))
    }

    fn check_metadata(md: &serde_json::Map<String, Value>, field: &str) -> OpResult<()> {
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
    fn create(&self, list: &ListName, new: &NewTask) -> OpResult<Task> {
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
        let own_id = |x: TaskId| -> OpResult<()> {
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

    fn get(&self, list: &ListName, id: TaskId) -> OpResult<Task> {
        let Some(mut tx) = self.begin(list.as_str(), false)? else {
            return Err(not_found(list, id));
        };
        tx.task(id)
    }

    fn update(&self, list: &ListName, id: TaskId, patch: &Patch) -> OpResult<Task> {
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

    fn delete(&self, list: &ListName, id: TaskId) -> OpResult<()> {
        // The `delete-without-lock` mutant: the bug on purpose, a delete that removes the
        // file while an update holding the lock may have read the task and write it back.
        let locked = !self.broken(Mutant::NoLock) && !self.broken(Mutant::DeleteWithoutLock);
        let Some(mut tx) = self.begin_locking(list.as_str(), false, locked)? else {
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
        // Without the lock (`no-lock`, `delete-without-lock`) `.tmp` is not ours to use.
        if self.options.durable && tx.lock.is_some() {
            tx.persist_watermark(id)?;
        }
        tx.commit()
    }

    fn list(&self, list: &ListName) -> OpResult<(Vec<Task>, Vec<String>)> {
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

    fn claim(&self, list: &ListName, id: TaskId, owner: &str) -> OpResult<Task> {
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
mod listing;
mod pretty;
mod txn;
mod watch;

pub use index::INDEX_NAME as LIST_INDEX_NAME;
use listing::{LIST_INDEX_MIN, LIST_SETTLE, LIST_WATCH_MIN};
pub use txn::SharedTask;
use txn::{CachedTask, Check, FolderStamp, ListCache, Listed, Slot, Txn, WatchUpdate};

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    use txn::{TASK_CNAME_LEN, task_cname};

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
}
