//! The id book of a driver whose product names tasks otherwise than the wire does: an `mcp:`
//! target whose mapping keeps tables (docs/mcp-targets.md, "Ids and lists"; per list, wire id
//! ↔ the server's id with `task.ids = "table"`, and list name → the server's container id with
//! `[lists.create]`), and oh-my-opencode's `T-{uuid}` ids (docs/oh-my-opencode.md).
//!
//! The book is one JSON file under the session root, outside every server's data
//! (`ROOT/.taskproof-mcp/ids.json`: no list can be named `.taskproof-mcp`), shared by every
//! session on the root (a scenario's agents, a race's writers, a restarted session) and
//! changed under an exclusive `flock` of `ROOT/.taskproof-mcp/lock`, written whole and
//! renamed into place, as the store writes its files ([`Dir::lock`], [`Dir::write_atomic`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use taskproof_store::{Dir, ReadError};

/// The folder of the book under a root.
pub const DIR: &str = ".taskproof-mcp";
/// The book's file in [`DIR`].
const FILE: &str = "ids.json";
/// The lock file in [`DIR`].
const LOCK: &str = "lock";

/// The tables as stored.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Tables {
    /// List name → its ids.
    #[serde(default)]
    pub lists: BTreeMap<String, ListIds>,
    /// List name → the server's container id.
    #[serde(default)]
    pub containers: BTreeMap<String, String>,
}

/// One list's ids: wire id (decimal) → the server's id, and the highest number given.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(from = "StoredListIds")]
pub struct ListIds {
    pub highest: u64,
    ids: BTreeMap<String, String>,
    /// The server's id → its wire id: `ids` the other way round, made when the book is read.
    #[serde(skip)]
    by_server: BTreeMap<String, String>,
}

/// [`ListIds`] as the file holds it.
#[derive(Deserialize)]
struct StoredListIds {
    highest: u64,
    ids: BTreeMap<String, String>,
}

impl From<StoredListIds> for ListIds {
    fn from(s: StoredListIds) -> ListIds {
        let mut by_server = BTreeMap::new();
        for (w, server) in &s.ids {
            by_server.entry(server.clone()).or_insert_with(|| w.clone());
        }
        ListIds {
            highest: s.highest,
            ids: s.ids,
            by_server,
        }
    }
}

impl Tables {
    /// The server's id for a wire id of `list`; a wire id the table does not know is given
    /// as it is.
    pub fn server_id(&self, list: &str, wire: &str) -> String {
        self.lists
            .get(list)
            .and_then(|l| l.ids.get(wire))
            .cloned()
            .unwrap_or_else(|| wire.to_string())
    }

    /// The wire id of a server id of `list`, if the table knows it.
    pub fn known_wire_id(&self, list: &str, server: &str) -> Option<&str> {
        self.lists
            .get(list)
            .and_then(|l| l.by_server.get(server))
            .map(String::as_str)
    }

    /// The wire id of a task's server id: the one it was given, else the next number of its
    /// list (recorded). Returns whether the table changed.
    pub fn wire_id(&mut self, list: &str, server: &str) -> (String, bool) {
        if let Some(w) = self.known_wire_id(list, server) {
            return (w.to_string(), false);
        }
        let l = self.lists.entry(list.to_string()).or_default();
        l.highest += 1;
        let w = l.highest.to_string();
        l.ids.insert(w.clone(), server.to_string());
        l.by_server.insert(server.to_string(), w.clone());
        (w, true)
    }

    /// Whether the table knows a wire id for every server id `tasks` name: their own and
    /// their edges' (`blocks`, `blockedBy`).
    pub fn knows_all(&self, list: &str, tasks: &[&mut Value]) -> bool {
        tasks.iter().all(|t| {
            let edges = ["blocks", "blockedBy"]
                .into_iter()
                .filter_map(|k| t.get(k).and_then(Value::as_array))
                .flatten();
            t.get("id")
                .into_iter()
                .chain(edges)
                .filter_map(Value::as_str)
                .all(|s| self.known_wire_id(list, s).is_some())
        })
    }

    /// Gives `tasks` (wire tasks with the server's ids) wire ids: each task's its own, a new
    /// one numbered ([`Tables::wire_id`]); each edge's after every task's own, so that edges
    /// between them read as wire ids. An edge the table does not know is a task of the list
    /// no answer has numbered yet (another session's create still on its way back): it is
    /// numbered now, as that create's answer will then read it; unless it is in the wire's
    /// form (decimal digits), an id the server was sent as it is and echoes, left so.
    /// Returns whether the table changed.
    pub fn give_wire_ids(&mut self, list: &str, tasks: &mut [&mut Value]) -> bool {
        let mut changed = false;
        for task in tasks.iter_mut() {
            if let Some(Value::String(id)) = task.get_mut("id") {
                let (w, new) = self.wire_id(list, id);
                changed |= new;
                *id = w;
            }
        }
        for task in tasks.iter_mut() {
            for k in ["blocks", "blockedBy"] {
                if let Some(Value::Array(a)) = task.get_mut(k) {
                    for x in a.iter_mut() {
                        let Value::String(s) = x else { continue };
                        if let Some(w) = self.known_wire_id(list, s) {
                            *s = w.to_string();
                        } else if !s.bytes().all(|b| b.is_ascii_digit()) {
                            let (w, new) = self.wire_id(list, s);
                            changed |= new;
                            *s = w;
                        }
                    }
                }
            }
        }
        changed
    }
}

/// The book of one root.
#[derive(Debug, Clone)]
pub struct Book {
    dir: PathBuf,
}

impl Book {
    pub fn new(root: &Path) -> Book {
        Book {
            dir: root.join(DIR),
        }
    }

    fn error(&self, name: &str, e: impl std::fmt::Display) -> String {
        format!("{}: {e}", self.dir.join(name).display())
    }

    /// The tables as they are now, without the lock (a read that changes nothing).
    pub fn read(&self) -> Result<Tables, String> {
        match Dir::open_root(&self.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Tables::default()),
            Err(e) => Err(e.to_string()),
            Ok(dir) => self.read_in(&dir),
        }
    }

    fn read_in(&self, dir: &Dir) -> Result<Tables, String> {
        match dir.read(FILE) {
            Err(ReadError::Missing) => Ok(Tables::default()),
            Err(e) => Err(self.error(FILE, e)),
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| self.error(FILE, format!("not the id book ({e})"))),
        }
    }

    /// Runs `f` on the tables under the book's lock; writes them back when `f` says they
    /// changed. The lock is held while `f` runs (which may call a tool: a container made
    /// once, whoever asks first).
    pub fn with<R, E>(
        &self,
        f: impl FnOnce(&mut Tables) -> Result<(R, bool), E>,
    ) -> Result<Result<R, E>, String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let dir = Dir::open_root(&self.dir).map_err(|e| e.to_string())?;
        // The lock ends when the guard is dropped, after the write.
        let _lock = dir.lock(LOCK).map_err(|e| self.error(LOCK, e))?;
        let mut tables = self.read_in(&dir)?;
        let (r, changed) = match f(&mut tables) {
            Ok(x) => x,
            Err(e) => return Ok(Err(e)),
        };
        if changed {
            // Not synced: the book is the harness's bookkeeping inside the sandbox, read only
            // by this run's sessions, and gone with it; the rename alone keeps it whole for
            // them. (A sync a new id cost a case of dex several milliseconds.)
            let text = serde_json::to_vec(&tables).expect("tables serialize");
            dir.write_atomic(FILE, &text, false)
                .map_err(|e| self.error(FILE, e))?;
        }
        Ok(Ok(r))
    }

    /// Forgets `lists`' tables: lists released for good (the fuzzer's cases on a shared root
    /// never name a list again), so that the book every request reads does not grow with
    /// every case.
    pub fn forget(&self, lists: &[&str]) -> Result<(), String> {
        if !self.dir.exists() {
            return Ok(());
        }
        // Every session of a root releases the same lists: the first forgets them, the
        // others find them gone without taking the lock.
        let now = self.read()?;
        if !lists
            .iter()
            .any(|l| now.lists.contains_key(*l) || now.containers.contains_key(*l))
        {
            return Ok(());
        }
        // Forgetting cannot be refused: the only error is the book's own.
        let forgotten: Result<(), std::convert::Infallible> = self.with(|t| {
            let mut changed = false;
            for l in lists {
                changed |= t.lists.remove(*l).is_some();
                changed |= t.containers.remove(*l).is_some();
            }
            Ok(((), changed))
        })?;
        let Ok(()) = forgotten;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_numbered_per_list_and_a_second_handout_gets_its_old_number() {
        let dir = tempfile::tempdir().unwrap();
        let book = Book::new(dir.path());
        let give = |list: &str, server: &str| {
            book.with(|t| Ok::<_, ()>(t.wire_id(list, server)))
                .unwrap()
                .unwrap()
        };
        assert_eq!(give("l", "x9"), "1");
        assert_eq!(give("l", "a7"), "2");
        assert_eq!(give("m", "q"), "1");
        // The server hands "x9" out again: it is wire id 1 again.
        assert_eq!(give("l", "x9"), "1");
        assert_eq!(give("l", "new"), "3");
        // Another session on the root (a fresh Book) sees the same table.
        let t = Book::new(dir.path()).read().unwrap();
        assert_eq!(t.server_id("l", "2"), "a7");
        // A wire id the table does not know goes as given.
        assert_eq!(t.server_id("l", "999"), "999");
        assert_eq!(t.server_id("nope", "1"), "1");
    }

    /// An answer's tasks get wire ids: their own (numbered when new), then their edges'
    /// (one to a task of the same answer too); an edge to a server id the table does not
    /// know yet is numbered after them (a task another session's create made, whose answer
    /// has not come back), while one in the wire's form stays as the server echoed it. A
    /// book read again knows the server's ids the other way round.
    #[test]
    fn an_answers_tasks_and_edges_get_wire_ids() {
        let dir = tempfile::tempdir().unwrap();
        let book = Book::new(dir.path());
        book.with(|t| Ok::<_, ()>(((), t.wire_id("l", "k-old").1)))
            .unwrap()
            .unwrap();
        let mut answer = serde_json::json!([
            {"id": "k-new", "blockedBy": ["k-old", "k-other", "77"], "blocks": []},
            {"id": "k-old", "blocks": ["k-new"]},
        ]);
        let mut tasks: Vec<&mut Value> = answer.as_array_mut().unwrap().iter_mut().collect();
        let read = book.read().unwrap();
        assert!(!read.knows_all("l", &tasks), "k-new is new");
        let changed = book
            .with(|t| Ok::<_, ()>((t.give_wire_ids("l", &mut tasks), true)))
            .unwrap()
            .unwrap();
        assert!(changed);
        assert_eq!(
            answer,
            serde_json::json!([
                {"id": "2", "blockedBy": ["1", "3", "77"], "blocks": []},
                {"id": "1", "blocks": ["2"]},
            ])
        );
        let again = Book::new(dir.path()).read().unwrap();
        assert_eq!(again.known_wire_id("l", "k-new"), Some("2"));
        assert_eq!(again.known_wire_id("l", "k-other"), Some("3"));
        assert_eq!(again.known_wire_id("l", "77"), None);
        assert_eq!(again.known_wire_id("m", "k-new"), None);
        let mut known = serde_json::json!({"id": "k-new", "blockedBy": ["k-old"]});
        assert!(again.knows_all("l", &[&mut known]));
        // Written whole through the store's temporary name, renamed: nothing else is left.
        let mut files: Vec<String> = std::fs::read_dir(dir.path().join(DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files, ["ids.json", "lock"]);
    }

    /// A released list's tables leave the book; the others stay as they were, and a book
    /// never written is left alone.
    #[test]
    fn forgotten_lists_leave_the_book() {
        let dir = tempfile::tempdir().unwrap();
        let book = Book::new(dir.path());
        book.forget(&["l"]).unwrap();
        assert!(!dir.path().join(DIR).exists());
        for (list, server) in [("c0-l", "a"), ("c0-m", "b"), ("c1-l", "c")] {
            book.with(|t| Ok::<_, ()>(((), t.wire_id(list, server).1)))
                .unwrap()
                .unwrap();
        }
        book.with(|t| {
            t.containers.insert("c0-l".into(), "project-1".into());
            Ok::<_, ()>(((), true))
        })
        .unwrap()
        .unwrap();
        book.forget(&["c0-l", "c0-m"]).unwrap();
        let t = Book::new(dir.path()).read().unwrap();
        assert_eq!(t.lists.keys().collect::<Vec<_>>(), ["c1-l"]);
        assert!(t.containers.is_empty());
        assert_eq!(t.known_wire_id("c1-l", "c"), Some("1"));
    }

    #[test]
    fn concurrent_writers_share_one_table() {
        let dir = tempfile::tempdir().unwrap();
        let handles: Vec<_> = (0..4)
            .map(|w| {
                let book = Book::new(dir.path());
                std::thread::spawn(move || {
                    for i in 0..25 {
                        book.with(|t| Ok::<_, ()>(t.wire_id("l", &format!("w{w}-{i}"))))
                            .unwrap()
                            .unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let t = Book::new(dir.path()).read().unwrap();
        assert_eq!(t.lists["l"].highest, 100);
        assert_eq!(t.lists["l"].ids.len(), 100);
    }
}
