//! `list`: the one operation that reads a whole folder, and what it keeps between calls so
//! that the next `list` of a large list reads only what changed. A cache per list of every
//! task file's decoded task and identity (device, inode, size, change time); an inotify
//! watch per cached file once the list is large ([`watch`]); the cache kept on disk in the
//! list's `.list-index` for the next process ([`index`]); and the answer written straight
//! from the cached tasks' JSON. A file that changed less than [`LIST_SETTLE`] ago is not
//! cached: its change time could still move without its identity changing. The other five
//! operations are in the parent module; they read only the tasks they need.

use std::sync::Arc;
use std::time::SystemTime;

use rayon::prelude::*;
use serde_json::Value;

use super::*;

/// A file that changed less than this long ago could change again in place without its
/// change time moving (timestamps are coarse), so `list` does not cache it yet: the rule git
/// applies to "racy" index entries.
pub(super) const LIST_SETTLE: Duration = Duration::from_secs(2);

/// The smallest list whose cached files `list` watches with inotify instead of `stat`ing
/// each: below it the `stat`s cost little, and an inotify instance (of which a user may have
/// only 128) is not worth taking.
pub(super) const LIST_WATCH_MIN: usize = 256;

/// The smallest list whose cache `list` also keeps on disk, in the list's `.list-index`, for
/// the first list of the next process (see `index.rs`): below it reading the files is quick.
pub(super) const LIST_INDEX_MIN: usize = 256;

impl StrictStore {
    /// `list`, with the tasks as the cache holds them (shared, not copied), for answers
    /// written straight from them (`TaskStore::write_answer`).
    pub fn list_shared(&self, list: &ListName) -> OpResult<(Vec<Arc<SharedTask>>, Vec<String>)> {
        self.list_from(list, true)
    }

    /// `list`, taking a cache that starts empty from the list's index when `use_index`.
    pub(super) fn list_from(
        &self,
        list: &ListName,
        use_index: bool,
    ) -> OpResult<(Vec<Arc<SharedTask>>, Vec<String>)> {
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
        let slots: Vec<OpResult<Listed>> = ids
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
    pub(super) fn load_index(
        &self,
        tx: &Txn<'_>,
        folder: (u64, u64),
        ids: &[TaskId],
        cache: &mut ListCache,
    ) {
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
    pub(super) fn forget_list(&self, list: &ListName) -> OpResult<()> {
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
    pub(super) fn write_answer_line(&self, line: &str, out: &mut Vec<u8>) {
        let request = match serde_json::from_str::<Value>(line) {
            Ok(v) if self.mutant.is_none() => Request::from_json(&v),
            // The mutants answer through `handle_value`, which some of them replace.
            Ok(v) => return self.handle_value(&v).write_json(out),
            Err(_) => return self.handle_line(line).write_json(out),
        };
        match request {
            Ok(Request::List { list }) => {
                match crate::audit::with_op(taskproof_core::protocol::Op::List, || {
                    self.list_shared(&list)
                }) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use txn::FileIdentity;

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
