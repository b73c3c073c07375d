//! The id book of an `mcp:` target whose mapping keeps tables (docs/mcp-targets.md, "Ids
//! and lists"): per list, wire id ↔ the server's id (`task.ids = "table"`), and list name →
//! the server's container id (`[lists.create]`).
//!
//! The book is one JSON file under the session root, outside every server's data
//! (`ROOT/.taskproof-mcp/ids.json`: no list can be named `.taskproof-mcp`), shared by every
//! session on the root (a scenario's agents, a race's writers, a restarted session) and
//! changed under an exclusive `flock` of `ROOT/.taskproof-mcp/lock`, written whole to a
//! temporary file and renamed.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The folder of the book under a root.
pub const DIR: &str = ".taskproof-mcp";

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
pub struct ListIds {
    pub highest: u64,
    pub ids: BTreeMap<String, String>,
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
    pub fn known_wire_id(&self, list: &str, server: &str) -> Option<String> {
        self.lists.get(list).and_then(|l| {
            l.ids
                .iter()
                .find(|(_, s)| s.as_str() == server)
                .map(|(w, _)| w.clone())
        })
    }

    /// The wire id of a task's server id: the one it was given, else the next number of its
    /// list (recorded). Returns whether the table changed.
    pub fn wire_id(&mut self, list: &str, server: &str) -> (String, bool) {
        if let Some(w) = self.known_wire_id(list, server) {
            return (w, false);
        }
        let l = self.lists.entry(list.to_string()).or_default();
        l.highest += 1;
        let w = l.highest.to_string();
        l.ids.insert(w.clone(), server.to_string());
        (w, true)
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

    fn file(&self) -> PathBuf {
        self.dir.join("ids.json")
    }

    /// The tables as they are now, without the lock (a read that changes nothing).
    pub fn read(&self) -> Result<Tables, String> {
        match std::fs::read(self.file()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Tables::default()),
            Err(e) => Err(format!("{}: {e}", self.file().display())),
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("{}: not the id book ({e})", self.file().display())),
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
        let lock_path = self.dir.join("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&lock_path)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| format!("flock {}: {e}", lock_path.display()))?;
        let mut tables = self.read()?;
        let (r, changed) = match f(&mut tables) {
            Ok(x) => x,
            Err(e) => return Ok(Err(e)),
        };
        if changed {
            let tmp = self
                .dir
                .join(format!("ids.json.{}.tmp", std::process::id()));
            let text = serde_json::to_vec_pretty(&tables).expect("tables serialize");
            let mut out =
                std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
            out.write_all(&text)
                .and_then(|()| out.sync_all())
                .map_err(|e| format!("{}: {e}", tmp.display()))?;
            std::fs::rename(&tmp, self.file())
                .map_err(|e| format!("{}: {e}", self.file().display()))?;
        }
        // The lock ends when `lock` is closed.
        drop(lock);
        Ok(Ok(r))
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
