//! Lists left out of reach (docs/check.md, "Lists under agent teams"): a session's own list
//! whose tasks are all still on disk while the session that made it, still running, reads
//! another list. Claude Code 2.1.178 to 2.1.310 with agent teams on does this at every
//! `--resume`: the resumed session's team is keyed to a fresh id, so it works in a new,
//! empty `session-<8 hex>` folder and `TaskList` answers "No tasks found", while the old
//! folder keeps every file (anthropics/claude-code#76844; taskproof's claim
//! `cc-session-list-resume-keeps-id-teams-env`). Nothing vanished, so the journal has nothing
//! to say; what tells is the configuration folder ([`crate::teams`]): which session made the
//! list (its name, or the hook's journal of it) and which list that session reads now.
//!
//! `--restore` writes such tasks where the session reads: byte for byte when their ids are
//! free there, else each under the next free id with its edges among them renumbered alike.
//! The old list is left as it is, and its journal records what went where, so the tasks are
//! named and written once.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::discover::ListLocation;
use crate::finding::{Finding, FindingKind, Repair};
use crate::fix::{Change, RepairOutcome};
use crate::journal;
use crate::teams::{self, Reads, Sessions};
use taskproof_core::protocol::Layout;
use taskproof_core::task::TaskId;
use taskproof_store::{Dir, HIGHWATERMARK_NAME, LOCK_NAME, ReadError, parse_watermark};

/// One list out of reach of the session that made it.
#[derive(Debug, Clone)]
pub struct Strand {
    pub list: ListLocation,
    pub session: String,
    /// What the session reads now, told from its process `reads.pid`.
    pub reads: Reads,
    /// How the list was tied to the session.
    pub by: String,
    /// The task files not yet written where the session reads, with their bytes, by id.
    pub files: Vec<(TaskId, String, Vec<u8>)>,
}

/// The lists among `lists` (in the folder of lists `root`) left out of reach of a session
/// still running.
pub fn strands(root: &Path, lists: &[ListLocation]) -> Vec<Strand> {
    let Some(config) = teams::config_of(root) else {
        return Vec::new();
    };
    let sessions = Sessions::read(&config);
    if sessions.live.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for list in lists.iter().filter(|l| teams::is_own_list_name(&l.name)) {
        let j = journal::path_for(&list.path, &list.name)
            .and_then(|p| journal::read(&p, &list.name).ok().flatten());
        let mut owners: Vec<(&str, String)> = Vec::new();
        for live in &sessions.live {
            if owners.iter().any(|(s, _)| *s == live.session) {
                continue;
            }
            let by = if teams::own_list_names(&live.session).contains(&list.name) {
                "its name".to_string()
            } else if let Some(at) = j.as_ref().and_then(|j| j.sessions.get(&live.session)) {
                format!(
                    "the hook's journal of it, whose last run by that session was at {}",
                    taskproof_store::audit::format_time(*at)
                )
            } else {
                continue;
            };
            owners.push((&live.session, by));
        }
        for (session, by) in owners {
            let Some(reads) = sessions.reads(session, root) else {
                continue;
            };
            if reads.list == list.name {
                continue;
            }
            let files = unrestored(list, j.as_ref(), &root.join(&reads.list));
            if files.is_empty() {
                continue;
            }
            out.push(Strand {
                list: list.clone(),
                session: session.to_string(),
                reads,
                by,
                files,
            });
        }
    }
    out
}

/// The task files of `list`, less those its journal says a restore wrote elsewhere as they
/// are now, and those the folder `into` already holds under their name byte for byte (a
/// restore whose record in the journal failed).
fn unrestored(
    list: &ListLocation,
    j: Option<&journal::Journal>,
    into: &Path,
) -> Vec<(TaskId, String, Vec<u8>)> {
    let Ok(dir) = list.open() else {
        return Vec::new();
    };
    let Ok(entries) = dir.entries() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, _) in entries {
        let Some(id) = Layout::ClaudeCode.task_id_of(&name) else {
            continue;
        };
        let Ok(bytes) = dir.read(&name) else {
            continue;
        };
        let h = journal::hash(&name, &bytes);
        let done = j
            .and_then(|j| j.files.get(&name))
            .and_then(|lives| lives.last())
            .is_some_and(|l| l.restored_into.is_some() && l.hash == h);
        let there = std::fs::read(into.join(&name)).is_ok_and(|b| b == bytes);
        if !done && !there {
            out.push((id, name, bytes));
        }
    }
    out.sort_by_key(|(id, _, _)| *id);
    out
}

/// The findings of a strand: one per task file, S14 `stranded`.
pub fn findings(s: &Strand, hint: &str) -> Vec<Finding> {
    s.files
        .iter()
        .map(|(id, name, bytes)| {
            let v = serde_json::from_slice::<Value>(bytes).ok();
            let field = |k: &str| {
                v.as_ref()
                    .and_then(|v| v.get(k))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            let what = match (field("subject"), field("status")) {
                (Some(sub), Some(st)) => format!("task {id} {sub:?} ({st})"),
                _ => format!("task {id}"),
            };
            Finding::new(
                &s.list.name,
                name.clone(),
                FindingKind::Stranded,
                format!(
                    "{what} is out of reach of session {} (process {}, running): this list is that session's ({}), but it reads the list {} now ({}), so its TaskList and TaskGet do not show it; the file is here, nothing was deleted. Claude Code 2.1.178 to 2.1.310 with agent teams on does this at every --resume (anthropics/claude-code#76844); put it where the session reads with `{hint}`",
                    s.session, s.reads.pid, s.by, s.reads.list, s.reads.how
                ),
            )
            .involving([*id])
        })
        .collect()
}

/// Writes a strand's tasks into the list its session reads (made when it does not exist
/// yet), under that list's `.lock`, and records in both journals what went where.
pub fn restore(root: &Path, s: &Strand, now: u64) -> Vec<Change> {
    let into = root.join(&s.reads.list);
    let shown = into.display().to_string();
    let change = |file: &str, how: String, outcome| Change {
        list: s.list.name.clone(),
        repair: Repair::PutInReach {
            file: file.to_string(),
            into: shown.clone(),
            how,
        },
        outcome,
    };
    let fail_all = |why: String| -> Vec<Change> {
        s.files
            .iter()
            .map(|(_, f, _)| {
                let how = format!("where session {} reads", s.session);
                change(f, how, RepairOutcome::Skipped(why.clone()))
            })
            .collect()
    };
    let target = match open_or_make(root, &s.reads.list) {
        Ok(d) => d,
        Err(e) => return fail_all(e),
    };
    let _lock = match target.lock(LOCK_NAME) {
        Ok(l) => l,
        Err(e) => return fail_all(format!("lock {}: {e}", into.join(LOCK_NAME).display())),
    };
    // The highest id the list has given: a task put there never takes one of them.
    let top = match given(&target) {
        Ok(t) => t,
        Err(e) => return fail_all(format!("read {shown}: {e}")),
    };
    let plan = renumber(&s.files, top);
    let mut out = Vec::new();
    let mut written: Vec<(String, Vec<u8>)> = Vec::new();
    let mut originals: Vec<(String, Vec<u8>)> = Vec::new();
    for ((id, name, bytes), (new_id, new_bytes)) in s.files.iter().zip(plan) {
        let new_name = Layout::ClaudeCode
            .file_name(new_id)
            .unwrap_or_else(|| name.clone());
        let version = if new_id == *id {
            format!(
                "as it is in {}, byte for byte, where session {} reads",
                s.list.name, s.session
            )
        } else {
            format!(
                "as {new_name}: {} has given ids up to {top} already, so the tasks put there take the next ones, in order, and their edges among them are renumbered alike",
                s.reads.list
            )
        };
        let outcome = match target.write_atomic(&new_name, &new_bytes, true) {
            Ok(()) => {
                written.push((new_name, new_bytes));
                originals.push((name.clone(), bytes.clone()));
                RepairOutcome::Done
            }
            Err(e) => RepairOutcome::Skipped(e.to_string()),
        };
        out.push(change(name, version, outcome));
    }
    // No `.highwatermark` is written: the files keep their ids from being given again, and
    // Claude Code writes it itself when it deletes (a `.highwatermark` written here would
    // fall below the next task the session makes, which it does not raise).
    if let Err(e) = target.sync() {
        out.push(Change {
            list: s.list.name.clone(),
            repair: Repair::RestoreSync {
                into: shown.clone(),
            },
            outcome: RepairOutcome::Skipped(e.to_string()),
        });
    }
    // Recorded after the files are written: a restore cut short before this is made again.
    if !written.is_empty() {
        let record = |path: Option<std::path::PathBuf>,
                      f: &dyn Fn(&Path) -> Result<(), journal::JournalError>| {
            let path = path?;
            f(&path).err().map(|e| Change {
                list: s.list.name.clone(),
                repair: Repair::RestoreJournal {
                    journal: path.display().to_string(),
                },
                outcome: RepairOutcome::Skipped(format!("failed to {e}")),
            })
        };
        let old = record(journal::path_for(&s.list.path, &s.list.name), &|p| {
            journal::record_seen(p, &s.list.name, &s.list.path, &originals, now)?;
            journal::record_restore(
                p,
                &s.list.name,
                &s.list.path,
                &originals,
                &shown,
                false,
                now,
            )
        });
        let new = record(journal::path_for(&into, &s.reads.list), &|p| {
            journal::record_seen(p, &s.reads.list, &into, &written, now)
        });
        out.extend(old.into_iter().chain(new));
    }
    out
}

/// The list folder `name` in `root`, made when it does not exist (Claude Code makes it at
/// the first task anyway); never through a link.
fn open_or_make(root: &Path, name: &str) -> Result<Dir, String> {
    let r = Dir::open_root(root).map_err(|e| format!("open {}: {e}", root.display()))?;
    match r.open_dir(name) {
        Ok(Some(d)) => Ok(d),
        Ok(None) => r
            .create_dir(name)
            .map_err(|e| format!("make {}: {e}", root.join(name).display())),
        Err(ReadError::Io(e)) => Err(format!("open {}: {e}", root.join(name).display())),
        Err(e) => Err(format!("open {}: {e}", root.join(name).display())),
    }
}

/// The highest id a list folder has given: its highest task file, or its `.highwatermark`
/// when that is higher.
fn given(dir: &Dir) -> std::io::Result<u64> {
    let highest = dir
        .entries()?
        .iter()
        .filter_map(|(n, _)| Layout::ClaudeCode.task_id_of(n))
        .map(TaskId::get)
        .max()
        .unwrap_or(0);
    let hw = dir
        .read(HIGHWATERMARK_NAME)
        .ok()
        .and_then(|b| parse_watermark(&b))
        .unwrap_or(0);
    Ok(highest.max(hw))
}

/// Each task's id and bytes where it goes: unchanged when every id of the set is above `top`,
/// the highest id the list has given (its highest task file or `.highwatermark`); else every task under the next
/// free ids, in id order, with `id` and the `blocks`/`blockedBy` entries naming a task of the
/// set renumbered alike (an entry naming a task outside the set is dropped: that task is not
/// in the list it goes to).
fn renumber(files: &[(TaskId, String, Vec<u8>)], top: u64) -> Vec<(TaskId, Vec<u8>)> {
    let free = files.iter().all(|(id, _, _)| id.get() > top);
    if free {
        return files.iter().map(|(id, _, b)| (*id, b.clone())).collect();
    }
    let map: BTreeMap<u64, u64> = files
        .iter()
        .enumerate()
        .map(|(i, (id, _, _))| (id.get(), top + 1 + i as u64))
        .collect();
    files
        .iter()
        .map(|(id, _, bytes)| {
            let new = TaskId(map[&id.get()]);
            let Ok(mut v) = serde_json::from_slice::<Value>(bytes) else {
                return (new, bytes.clone());
            };
            if let Some(o) = v.as_object_mut() {
                o.insert("id".into(), Value::String(new.to_string()));
                for key in ["blocks", "blockedBy"] {
                    if let Some(Value::Array(edges)) = o.get_mut(key) {
                        *edges = edges
                            .iter()
                            .filter_map(|e| {
                                let old = e.as_str()?.parse::<u64>().ok()?;
                                map.get(&old).map(|n| Value::String(n.to_string()))
                            })
                            .collect();
                    }
                }
            }
            let mut b = serde_json::to_vec_pretty(&v).unwrap_or_else(|_| bytes.clone());
            if bytes.ends_with(b"\n") {
                b.push(b'\n');
            }
            (new, b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: u64, blocks: &[&str]) -> (TaskId, String, Vec<u8>) {
        let v = serde_json::json!({"id": id.to_string(), "subject": format!("t{id}"),
            "status": "pending", "blocks": blocks, "blockedBy": []});
        (
            TaskId(id),
            format!("{id}.json"),
            serde_json::to_vec_pretty(&v).unwrap(),
        )
    }

    #[test]
    fn free_ids_go_byte_for_byte_and_taken_ones_are_renumbered_with_their_edges() {
        let files = vec![task(1, &["2", "9"]), task(2, &[])];
        let same = renumber(&files, 0);
        assert_eq!(same[0], (TaskId(1), files[0].2.clone()));
        // The list the session reads has task 1 and had 2: the set goes to 3 and 4.
        let moved = renumber(&files, 2);
        assert_eq!(moved[0].0, TaskId(3));
        assert_eq!(moved[1].0, TaskId(4));
        let v: Value = serde_json::from_slice(&moved[0].1).unwrap();
        assert_eq!(v["id"], "3");
        // 2 became 4; 9 was not moved, and is not in the list it goes to.
        assert_eq!(v["blocks"], serde_json::json!(["4"]));
        assert_eq!(v["subject"], "t1");
    }
}
