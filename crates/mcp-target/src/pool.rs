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

use serde_json::{Value, json};
use taskproof_core::protocol::{Layout, Op};

use crate::mapping::Mapping;
use crate::server::Server;
use crate::session::McpSession;
use crate::translate::Stop;

/// How many emptied servers a session keeps; more are stopped.
pub(crate) const POOL_MAX: usize = 4;

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
        if self.pool.is_empty() {
            return false;
        }
        // Every session's server of a list must keep one store: another session that starts
        // a server for `list` starts it in the root's folder of that name. So the list's
        // folder is made a link to the pooled server's, at once (a link is made whole or not
        // at all). Where it is there already, another session made it: a pooled server of
        // this session's that keeps its store in the folder it links to serves the list;
        // without one, or where the folder is a real one (another session's fresh server
        // keeps its store there), this session starts a server of its own beside it.
        let path = self.root.join(list);
        let taken = match std::fs::read_link(&path) {
            Ok(to) => self
                .pool
                .iter()
                .position(|p| std::path::Path::new(&p.folder) == to)
                .map(|i| self.pool.remove(i)),
            Err(_) if path.exists() => None,
            Err(_) => {
                let p = self.pool.pop().expect("checked above");
                if std::os::unix::fs::symlink(&p.folder, &path).is_ok() {
                    Some(p)
                } else {
                    // Another session linked or made it first: its link, or none.
                    self.pool.push(p);
                    std::fs::read_link(&path).ok().and_then(|to| {
                        self.pool
                            .iter()
                            .position(|p| std::path::Path::new(&p.folder) == to)
                            .map(|i| self.pool.remove(i))
                    })
                }
            }
        };
        let Some(p) = taken else {
            return false;
        };
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
        for list in lists {
            if !self.servers.contains_key(*list) {
                continue;
            }
            // Emptied through the session's own translation, on this server alone.
            let emptied = (why_not_reused(&self.mapping).is_none() && self.pool.len() < POOL_MAX)
                .then(|| self.empty(list));
            self.current = String::new();
            let mut server = self.servers.remove(*list).expect("checked above");
            let gone = self.gone.remove(*list).unwrap_or_default();
            let folder = self
                .folders
                .remove(*list)
                .unwrap_or_else(|| (*list).to_string());
            match emptied {
                Some(Ok(())) => self.pool.push(Pooled {
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
