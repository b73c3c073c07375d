//! Servers reused between lists (`Session::release_lists`): with one server per list, a
//! released list's server is emptied through the server's own tools (every task it lists
//! deleted, then listed again to see nothing), and kept in a small pool that the next newly
//! named list takes instead of starting a server. Ids of that list are numbered afresh in
//! the id book (the table is kept per list name, and a released list is never named again);
//! a wire id the book does not know, which on the reused server would name another task of
//! the list, is sent as the id of a task the server deleted, which it no longer has.
//!
//! A server that cannot be emptied so (the mapping has no delete or no list, keeps no id
//! table, shows the list's files under its name, or says the server keeps state a delete
//! does not reset: `server.reuse = false`), that refuses a delete or still lists a task, is
//! stopped instead; nothing of a released list reaches a later one.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use serde_json::{Value, json};
use taskproof_core::protocol::{Layout, Op};

use crate::mapping::Mapping;
use crate::server::Server;
use crate::session::McpSession;
use crate::translate::Stop;

/// How many emptied servers a root keeps; more are stopped.
pub(crate) const POOL_MAX: usize = 12;

/// How many rounds of deletes an emptying tries (a task another blocks may be refused
/// until its blocker is gone).
const ROUNDS: usize = 3;

/// An emptied server waiting for a list, with the server's ids of every task deleted on it
/// (ids the server no longer has).
pub(crate) struct Pooled {
    pub(crate) server: Server,
    pub(crate) gone: Vec<String>,
    /// The folder under the root the server keeps its store in.
    pub(crate) folder: String,
}

/// The emptied servers of one root, shared by every session on it: a session takes one
/// whose store is the folder its list names, whichever session emptied it. Sessions on one
/// root must all pick the same folder for a list, which separate pools cannot promise: each
/// would take the server it happened to pool, and the others would start one beside it.
pub(crate) type RootPool = Arc<Mutex<Shelf>>;

/// A root's emptied servers, and which list each pooled folder serves now.
#[derive(Default)]
pub(crate) struct Shelf {
    servers: Vec<Pooled>,
    /// Folder → the list linked to it, until that list is released: a folder serves one
    /// list at a time, however many of its servers wait.
    serving: HashMap<String, String>,
}

/// Every root's pool, held weakly: a root's pool, and its servers, end with the last
/// session on that root.
#[derive(Clone, Default)]
pub(crate) struct Pools(Arc<Mutex<HashMap<PathBuf, Weak<Mutex<Shelf>>>>>);

impl fmt::Debug for Pools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pools")
    }
}

impl Pools {
    /// The pool of the sessions on `root`, made with its first session.
    pub(crate) fn of(&self, root: &Path) -> RootPool {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|_, w| w.strong_count() > 0);
        if let Some(pool) = all.get(root).and_then(Weak::upgrade) {
            return pool;
        }
        let pool = RootPool::default();
        all.insert(root.to_path_buf(), Arc::downgrade(&pool));
        pool
    }
}

fn lock(pool: &RootPool) -> MutexGuard<'_, Shelf> {
    pool.lock().unwrap_or_else(|p| p.into_inner())
}

/// Of the folders no list is linked to, the one most pooled servers keep their store in
/// (the first such on a tie): the one that lets most sessions of the root find a server for
/// the list linked to it.
fn most_pooled(shelf: &Shelf) -> Option<String> {
    let pool = &shelf.servers;
    let mut best: Option<(&str, usize)> = None;
    for p in pool
        .iter()
        .filter(|p| !shelf.serving.contains_key(&p.folder))
    {
        let n = pool.iter().filter(|q| q.folder == p.folder).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((&p.folder, n));
        }
    }
    best.map(|(f, _)| f.to_string())
}

/// Why a released list's server cannot serve another list under `mapping`, or `None` when
/// it can.
pub fn why_not_reused(mapping: &Mapping) -> Option<&'static str> {
    if !mapping.launch.per_list {
        Some("one server serves every list (no server.per_list)")
    } else if !mapping.launch.reuse {
        Some(
            "the mapping says the server keeps state a delete does not reset (server.reuse = false)",
        )
    } else if !mapping.ops.contains_key(&Op::Delete) || !mapping.ops.contains_key(&Op::List) {
        Some("the mapping has no delete or no list to empty the server with")
    } else if !mapping.task.id_table {
        Some(
            "without an id table (task.ids = \"table\") a reused server's ids would not start afresh",
        )
    } else if mapping.layout != Layout::Opaque {
        Some(
            "the list's files are read under its own name, and a reused server keeps them under another",
        )
    } else {
        None
    }
}

impl McpSession {
    /// Takes an emptied server for `list` from the pool, if the mapping allows it and one
    /// waits; records the ids it deleted for [`crate::ids::ids_in`].
    pub(crate) fn take_pooled(&mut self, list: &str) -> bool {
        if why_not_reused(&self.mapping).is_some() {
            return false;
        }
        let pool = Arc::clone(&self.pool);
        let mut shelf = lock(&pool);
        if shelf.servers.is_empty() {
            return false;
        }
        // Every session's server of a list must keep one store: another session that starts
        // a server for `list` starts it in the root's folder of that name. So the list's
        // folder is made a link to a pooled server's, at once (a link is made whole or not
        // at all). Where it is there already, another session made it: a pooled server that
        // keeps its store in the folder it links to serves the list; without one, or where
        // the folder is a real one (another session's fresh server keeps its store there),
        // this session starts a server of its own beside it.
        let path = self.root.join(list);
        let folder = match std::fs::read_link(&path) {
            Ok(to) => Some(to),
            Err(_) if path.exists() => None,
            Err(_) => {
                let Some(pick) = most_pooled(&shelf) else {
                    return false;
                };
                match std::os::unix::fs::symlink(&pick, &path) {
                    Ok(()) => {
                        shelf.serving.insert(pick.clone(), list.to_string());
                        Some(PathBuf::from(pick))
                    }
                    // Another process linked or made it first: its link, or none.
                    Err(_) => std::fs::read_link(&path).ok(),
                }
            }
        };
        let Some(i) = folder.and_then(|to| {
            shelf
                .servers
                .iter()
                .position(|p| Path::new(&p.folder) == to)
        }) else {
            return false;
        };
        let mut p = shelf.servers.remove(i);
        // Each session records the ids it deleted; the store's are all of theirs.
        for q in shelf.servers.iter().filter(|q| q.folder == p.folder) {
            for id in &q.gone {
                if !p.gone.contains(id) {
                    p.gone.push(id.clone());
                }
            }
        }
        drop(shelf);
        self.servers.insert(list.to_string(), p.server);
        self.gone.insert(list.to_string(), p.gone);
        self.folders.insert(list.to_string(), p.folder);
        true
    }

    /// Empties each released list's server and pools it, or stops it.
    pub(crate) fn release(&mut self, lists: &[&str]) {
        if self.dead.is_some() || !self.mapping.launch.per_list {
            return;
        }
        // A released list's folder may serve the next list named (every session says so;
        // one whose server a restart ended has none to pool).
        lock(&self.pool)
            .serving
            .retain(|_, l| !lists.contains(&l.as_str()));
        for list in lists {
            if !self.servers.contains_key(*list) {
                continue;
            }
            // Emptied through the session's own translation, on this server alone.
            let room = lock(&self.pool).servers.len() < POOL_MAX;
            let emptied =
                (why_not_reused(&self.mapping).is_none() && room).then(|| self.empty(list));
            self.current = String::new();
            let mut server = self.servers.remove(*list).expect("checked above");
            let gone = self.gone.remove(*list).unwrap_or_default();
            let folder = self
                .folders
                .remove(*list)
                .unwrap_or_else(|| (*list).to_string());
            match emptied {
                Some(Ok(())) => lock(&self.pool).servers.push(Pooled {
                    server,
                    gone,
                    folder,
                }),
                _ => server.kill(),
            }
        }
    }

    /// Deletes every task `list`'s server lists, through the mapping (which records their
    /// ids as gone), until it lists none; or says why it could not be emptied.
    fn empty(&mut self, list: &str) -> Result<(), String> {
        for _ in 0..=ROUNDS {
            let listed = match self.answer(&json!({"op": "list", "list": list})) {
                Ok(a) => a,
                Err(Stop::Answer(a)) => return Err(format!("the list was refused: {a}")),
                Err(Stop::Target(e)) => return Err(e.to_string()),
            };
            let tasks = listed["tasks"].as_array().cloned().unwrap_or_default();
            let corrupt = listed["corrupt"].as_array().is_some_and(|c| !c.is_empty());
            if tasks.is_empty() && !corrupt {
                return Ok(());
            }
            if corrupt {
                return Err("the server lists tasks it cannot read".into());
            }
            for t in tasks.iter().rev() {
                let Some(id) = t.get("id").and_then(Value::as_str) else {
                    return Err(format!("a task without an id: {t}"));
                };
                match self.answer(&json!({"op": "delete", "list": list, "id": id})) {
                    // Refused (a task another blocks, say): the next round tries again.
                    Ok(_) | Err(Stop::Answer(_)) => {}
                    Err(Stop::Target(e)) => return Err(e.to_string()),
                }
            }
        }
        Err(format!(
            "it still lists tasks after {ROUNDS} rounds of deletes"
        ))
    }
}
