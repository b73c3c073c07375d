//! The redo journal that makes a change to several files atomic (S8, S10, S14).
//!
//! A change that writes more than one file (an edge mirrored into two tasks, a delete that
//! cleans references, a create with edges) first writes every resulting file's full content
//! into `.journal` (itself written whole, so it is either absent or complete), then applies
//! the entries one by one, then removes the journal. Every operation replays a journal it
//! finds before doing anything else, under the lock. Replay is idempotent (whole contents,
//! removals of what may already be gone), so a SIGKILL at any moment leaves either the state
//! before (journal not yet renamed into place) or, after the next replay, the state after.

use std::io;

use serde_json::{Map, Value, json};

use crate::fsys::Dir;

/// The journal's file name in a list folder.
pub const JOURNAL_NAME: &str = ".journal";

/// One file's new state: its whole content, or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub content: Option<Vec<u8>>,
}

/// Applies `entries` atomically as a group, through the journal when there is more than one.
pub fn commit(dir: &Dir, entries: &[Entry], durable: bool) -> io::Result<()> {
    match entries {
        [] => Ok(()),
        [one] => apply_one(dir, one, durable),
        many => {
            dir.write_atomic(JOURNAL_NAME, &encode(many), durable)?;
            apply_all(dir, many, durable)?;
            dir.remove(JOURNAL_NAME)?;
            if durable {
                dir.sync()?;
            }
            Ok(())
        }
    }
}

/// Replays a journal left by a process that died mid-change. Call under the lock.
pub fn recover(dir: &Dir, durable: bool) -> io::Result<()> {
    let bytes = match dir.read(JOURNAL_NAME) {
        Ok(b) => b,
        Err(super::fsys::ReadError::Missing) => return Ok(()),
        Err(e) => {
            return Err(io::Error::other(format!(
                "{}: cannot read the journal: {e}",
                dir.path().join(JOURNAL_NAME).display()
            )));
        }
    };
    // The journal is only ever renamed into place complete, so an unreadable one was written
    // by someone else; replaying a guess could destroy tasks, so stop and say so.
    let entries = decode(&bytes).map_err(|e| {
        io::Error::other(format!(
            "{}: the journal is damaged ({e}); move it away to continue",
            dir.path().join(JOURNAL_NAME).display()
        ))
    })?;
    apply_all(dir, &entries, durable)?;
    dir.remove(JOURNAL_NAME)?;
    if durable {
        dir.sync()?;
    }
    Ok(())
}

fn apply_one(dir: &Dir, e: &Entry, durable: bool) -> io::Result<()> {
    match &e.content {
        Some(bytes) => dir.write_atomic(&e.name, bytes, durable),
        None => {
            dir.remove(&e.name)?;
            if durable {
                dir.sync()?;
            }
            Ok(())
        }
    }
}

fn apply_all(dir: &Dir, entries: &[Entry], durable: bool) -> io::Result<()> {
    for e in entries {
        apply_one(dir, e, durable)?;
    }
    Ok(())
}

/// The entries as JSON, one object each: `name` with `content`, or with `remove: true`.
/// The audit trail's redo file holds them in the same form.
pub(super) fn entries_json(entries: &[Entry]) -> Vec<Value> {
    entries
        .iter()
        .map(|e| match &e.content {
            Some(c) => json!({"name": e.name, "content": String::from_utf8_lossy(c)}),
            None => json!({"name": e.name, "remove": true}),
        })
        .collect()
}

fn encode(entries: &[Entry]) -> Vec<u8> {
    let items = entries_json(entries);
    let mut out = serde_json::to_vec(&json!({"version": 1, "entries": items}))
        .expect("journal entries serialize");
    out.push(b'\n');
    out
}

fn decode(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let obj: &Map<String, Value> = v.as_object().ok_or("not an object")?;
    if obj.get("version").and_then(Value::as_u64) != Some(1) {
        return Err("unknown version".into());
    }
    let items = obj
        .get("entries")
        .and_then(Value::as_array)
        .ok_or("no entries")?;
    items
        .iter()
        .map(|item| {
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .ok_or("entry without a name")?;
            // Only plain names inside the folder: a damaged or hostile journal must not be
            // able to write elsewhere.
            if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                return Err(format!("entry names {name:?}"));
            }
            let content = match (item.get("content"), item.get("remove")) {
                (Some(Value::String(s)), None) => Some(s.as_bytes().to_vec()),
                (None, Some(Value::Bool(true))) => None,
                _ => return Err(format!("entry {name:?} has neither content nor remove")),
            };
            Ok(Entry {
                name: name.to_string(),
                content,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<Entry> {
        vec![
            Entry {
                name: "1.json".into(),
                content: Some(b"{\"a\":1}\n".to_vec()),
            },
            Entry {
                name: "2.json".into(),
                content: None,
            },
        ]
    }

    #[test]
    fn a_left_journal_is_replayed_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        std::fs::write(tmp.path().join("2.json"), b"old").unwrap();
        // What a process killed right after writing the journal leaves behind.
        dir.write_atomic(JOURNAL_NAME, &encode(&entries()), false)
            .unwrap();
        recover(&dir, false).unwrap();
        assert_eq!(
            std::fs::read(tmp.path().join("1.json")).unwrap(),
            b"{\"a\":1}\n"
        );
        assert!(!tmp.path().join("2.json").exists());
        assert!(!tmp.path().join(JOURNAL_NAME).exists());
        // Replaying twice is harmless.
        recover(&dir, false).unwrap();
    }

    #[test]
    fn a_damaged_journal_stops_instead_of_guessing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        std::fs::write(
            tmp.path().join(JOURNAL_NAME),
            b"{\"version\":1,\"entries\":[{\"name\":\"../x\",\"remove\":true}]}",
        )
        .unwrap();
        let e = recover(&dir, false).unwrap_err();
        assert!(e.to_string().contains("journal is damaged"), "{e}");
    }

    #[test]
    fn commit_leaves_no_journal() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        commit(&dir, &entries(), true).unwrap();
        assert!(tmp.path().join("1.json").exists());
        assert!(!tmp.path().join(JOURNAL_NAME).exists());
    }
}
