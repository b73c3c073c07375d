//! `check --restore`: writes back, from the list's [`journal`], the tasks that vanished
//! (docs/check.md, "Restore").
//!
//! By default into a **new list** beside the old one, `{list}-restored-YYYYMMDD-HHMMSS`: a
//! terminal UI of Claude Code deletes every task of a named list again about 5 s after the
//! next completion in it, or after a new session opens on it while all its tasks are
//! completed (measured on 2.1.17 to 2.1.332), so completed tasks written back into the list
//! they vanished from are lost again at the next turn. `--into-same-list` does it anyway, when
//! the user asks.
//!
//! What it writes: the journal's last whole version of each vanished task, byte for byte
//! (a version a hook run read while the file was being rewritten, empty, or not a task, is
//! passed over, and the change says which version it wrote and why; a task with no whole
//! version is named and not written); never a task the agent deleted, never over a file that exists (in the same list, a name that holds
//! a file now holds a newer task), each file whole and durably (the store's `.tmp`, fsync,
//! rename, fsync of the folder), under the list's `.lock` flock as `--fix` takes it. The
//! list's `.highwatermark` is raised, never lowered, to at least the highest id written back
//! (and in a new list, to the old list's), so no next create reuses a restored id. The journal
//! records each restore, so a task is restored once and `check` no longer calls it vanished;
//! a new list gets a journal of its own that starts with the restored versions.

use std::path::{Path, PathBuf};

use crate::CheckError;
use crate::audit::{self, Locking};
use crate::discover::ListLocation;
use crate::finding::Repair;
use crate::fix::{self, Change, RepairOutcome};
use crate::journal::{self, JournalError};
use crate::vanish::{self, Folder};
use taskproof_core::protocol::Layout;
use taskproof_store::audit::format_time;
use taskproof_store::{Dir, LOCK_NAME, LockGuard};

/// Where `--restore` writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Into {
    /// A new list beside the old one: the name given, else `{list}-restored-{time}`.
    #[default]
    NewList,
    /// A new list of this name.
    Named(String),
    /// The list the tasks vanished from (`--into-same-list`).
    SameList,
}

/// What one list's restore did.
#[derive(Debug, Default)]
pub struct Restored {
    pub changes: Vec<Change>,
    /// The list written into, when it is a new one.
    pub new_list: Option<ListLocation>,
    /// The journal read.
    pub journal: PathBuf,
}

/// The name of the new list of a restore made at `now`: `{list}-restored-YYYYMMDD-HHMMSS`
/// (UTC), a name Claude Code would keep as it is (`[A-Za-z0-9_-]`).
pub fn new_list_name(list: &str, now: u64) -> String {
    let t = format_time(now);
    let digits: String = t.chars().filter(char::is_ascii_digit).collect();
    format!("{list}-restored-{}-{}", &digits[..8], &digits[8..14])
}

/// Whether Claude Code would use `name` as a list folder unchanged.
fn is_list_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Restores the vanished tasks of the list at `location` from the journal at `journal_path`
/// (the list's own when `None`).
pub fn restore(
    location: &ListLocation,
    layout: Option<Layout>,
    journal_path: Option<&Path>,
    into: &Into,
    now: u64,
) -> Result<Restored, CheckError> {
    let list = location.name.clone();
    let jpath = match journal_path {
        Some(p) => p.to_path_buf(),
        None => journal::path_for(&location.path, &list).ok_or_else(|| CheckError::NoJournal {
            list: list.clone(),
            path: location.path.join("..").join(journal::JOURNAL_DIR),
        })?,
    };
    let journal_error = |error: JournalError| CheckError::Journal {
        list: list.clone(),
        error,
    };
    let j = journal::read(&jpath, &list)
        .map_err(journal_error)?
        .ok_or_else(|| CheckError::NoJournal {
            list: list.clone(),
            path: jpath.clone(),
        })?;
    let same = *into == Into::SameList;
    // A list folder that is gone (its journal is all that is left of it) restores into a
    // new list beside where it was; nothing can go back into it.
    let dir = match location.open() {
        Ok(d) => Some(d),
        Err(CheckError::Io { error, .. })
            if error.kind() == std::io::ErrorKind::NotFound && !same =>
        {
            None
        }
        Err(e) => return Err(e),
    };
    let io = |e| CheckError::io(location.path.clone(), e);
    let (layout, folder, bound) = match &dir {
        Some(dir) => {
            let layout = match layout {
                Some(l) => l,
                None => location.detect_layout(dir)?,
            };
            let audit = audit::audit_dir(dir, &list, layout, Locking::Probe).map_err(io)?;
            let folder = Folder::read(dir, &audit).map_err(io)?;
            (layout, folder, audit.bound)
        }
        None => {
            // The layout its journaled file names have, as a folder's are read.
            let layout =
                layout.unwrap_or_else(|| audit::detect_layout(j.files.keys().map(String::as_str)));
            let bound = j
                .files
                .keys()
                .filter_map(|f| layout.task_id_of(f))
                .map(|i| i.get())
                .max()
                .unwrap_or(0);
            (layout, Folder::default(), bound)
        }
    };
    let gone = vanish::vanished(&j, layout, &folder);
    let mut out = Restored {
        journal: jpath.clone(),
        ..Restored::default()
    };
    if gone.is_empty() {
        return Ok(out);
    }

    let parent = match location.path.canonicalize() {
        Ok(p) => p.parent().map(Path::to_path_buf).unwrap_or_default(),
        Err(_) => location
            .path
            .parent()
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_path_buf()))
            .unwrap_or_default(),
    };
    let (target_name, target_path) = match into {
        Into::SameList => (list.clone(), location.path.clone()),
        Into::Named(n) => (n.clone(), parent.join(n)),
        Into::NewList => {
            let name = new_list_name(&list, now);
            (name.clone(), parent.join(name))
        }
    };
    let shown = target_path.display().to_string();
    let skip = |file: &str, why: String| Change {
        list: list.clone(),
        repair: Repair::Restore {
            file: file.to_string(),
            into: shown.clone(),
            version: None,
        },
        outcome: RepairOutcome::Skipped(why),
    };

    // Which version of each file goes back: of the newest life that vanished, its latest
    // whole version. An older life of the same name (its id was reused, then that task
    // vanished too) is named and left, and so is a task the journal holds no whole version of.
    let mut chosen: Vec<(&vanish::Vanished, Vec<u8>, String)> = Vec::new();
    for v in gone.iter().rev() {
        if chosen.iter().any(|(c, _, _)| c.life.file == v.life.file) {
            out.changes.push(skip(
                &v.life.file,
                format!(
                    "an older version (journal line {}) of a task whose id was used again; the newest one that vanished is restored",
                    v.life.line
                ),
            ));
            continue;
        }
        let Some((r, bytes)) = v
            .life
            .restorable()
            .and_then(|r| Some((r, r.bytes.clone()?)))
        else {
            out.changes.push(skip(
                &v.life.file,
                format!(
                    "the journal {} holds no whole version of it ({}); nothing was written for it",
                    jpath.display(),
                    vanish::passed_over(&v.life)
                ),
            ));
            continue;
        };
        let version = if r.line == v.life.line {
            format!(
                "its last version, journaled at {} (line {})",
                format_time(r.seen_at),
                r.line
            )
        } else {
            format!(
                "the version journaled at {} (line {}), its last whole one; the newer ones are not ({})",
                format_time(r.seen_at),
                r.line,
                vanish::passed_over(&v.life)
            )
        };
        chosen.push((v, bytes, version));
    }
    chosen.reverse();
    if chosen.is_empty() {
        return Ok(out);
    }

    let (target, made) = if let (true, Some(dir)) = (same, dir) {
        (dir, None)
    } else {
        if !is_list_name(&target_name) {
            return Err(CheckError::RestoreTarget {
                list,
                into: target_path,
                why: "a list name is letters, digits, `_` and `-` only (Claude Code changes any other character to `-`)".into(),
            });
        }
        let (root, made) =
            create_list(&parent, &target_name).map_err(|why| CheckError::RestoreTarget {
                list: list.clone(),
                into: target_path.clone(),
                why,
            })?;
        (made, Some(root))
    };
    let target_io = |e| CheckError::io(target_path.clone(), e);
    let _lock = lock_target(
        &target,
        made.as_ref().map(|root| (root, target_name.as_str())),
    )
    .map_err(target_io)?;

    // From here on files are written: whatever fails is a change that says so, beside the
    // changes that say what was written, never an error that would hide them.
    let mut written: Vec<(String, Vec<u8>)> = Vec::new();
    for (v, bytes, version) in chosen {
        let file = &v.life.file;
        if same {
            match target.stat(file) {
                Ok(None) => {}
                Ok(Some(_)) => {
                    out.changes.push(skip(
                        file,
                        format!(
                            "{file} exists in the list: a task written after the journal last saw this one ({}), which a restore never writes over",
                            format_time(v.life.last_at)
                        ),
                    ));
                    continue;
                }
                Err(e) => {
                    out.changes.push(skip(file, e.to_string()));
                    continue;
                }
            }
        }
        let outcome = match target.write_atomic(file, &bytes, true) {
            Ok(()) => {
                written.push((file.clone(), bytes));
                RepairOutcome::Done
            }
            Err(e) => RepairOutcome::Skipped(e.to_string()),
        };
        out.changes.push(Change {
            list: list.clone(),
            repair: Repair::Restore {
                file: file.clone(),
                into: shown.clone(),
                version: Some(version),
            },
            outcome,
        });
    }
    let failed = |repair: Repair, why: String| Change {
        list: list.clone(),
        repair,
        outcome: RepairOutcome::Skipped(why),
    };

    // The next id must stay above every id written back, and in a new list above the old
    // list's too, so that a task created there later is never taken for a restored one.
    let highest = written
        .iter()
        .filter_map(|(f, _)| layout.task_id_of(f))
        .map(|i| i.get())
        .max()
        .unwrap_or(0);
    let want = if same { highest } else { highest.max(bound) };
    if layout == Layout::ClaudeCode
        && want > 0
        && let Some(outcome) = fix::raise_highwatermark(&target, want)
    {
        out.changes.push(Change {
            list: list.clone(),
            repair: Repair::RestoreHighwatermark {
                into: shown.clone(),
                to: want,
            },
            outcome,
        });
    }
    if let Err(e) = target.sync() {
        out.changes.push(failed(
            Repair::RestoreSync {
                into: shown.clone(),
            },
            format!("{e}; the files are written, and a power cut before the system writes them out may lose them"),
        ));
    }

    // Recorded after the files are written: a restore cut short before this point is made
    // again by the next run (into another new list), never lost.
    if !written.is_empty() {
        if let Err(e) =
            journal::record_restore(&jpath, &list, &location.path, &written, &shown, same, now)
        {
            out.changes.push(failed(
                Repair::RestoreJournal {
                    journal: jpath.display().to_string(),
                },
                format!("failed to {e}; until a restore is recorded there, `check` still names these tasks as vanished, and the next --restore writes them again"),
            ));
        }
        if !same
            && let Some(own) = journal::path_for(&target_path, &target_name)
            && let Err(e) = journal::record_seen(&own, &target_name, &target_path, &written, now)
        {
            out.changes.push(failed(
                Repair::RestoreJournal {
                    journal: own.display().to_string(),
                },
                format!("failed to {e}; without it, tasks that vanish from the new list cannot be named or restored"),
            ));
        }
    }
    if !same {
        out.new_list = Some(ListLocation::in_root(&parent, &target_name));
    }
    Ok(out)
}

/// Takes the lock of the list folder `target` a restore writes into. A new list, `made` as
/// the folder `name` in `root` by this restore, is removed again when that fails (with the
/// `.lock` the attempt may have left in it), so a restore that wrote nothing leaves nothing.
fn lock_target(target: &Dir, made: Option<(&Dir, &str)>) -> std::io::Result<LockGuard> {
    target.lock(LOCK_NAME).inspect_err(|_| {
        if let Some((root, name)) = made {
            let _ = target.remove(LOCK_NAME);
            // Only an empty folder is removed: anything else in it is not this restore's.
            let _ = rustix::fs::unlinkat(root.as_fd(), name, rustix::fs::AtFlags::REMOVEDIR);
        }
    })
}

/// Creates the new list folder `name` in `parent`; an existing one is refused, since a
/// restore never writes into a list it did not make (except with `--into-same-list`).
/// Returns `parent`, held open, and the new folder.
fn create_list(parent: &Path, name: &str) -> Result<(Dir, Dir), String> {
    let root = Dir::open_root(parent).map_err(|e| e.to_string())?;
    if root.entry_type(name).map_err(|e| e.to_string())?.is_some() {
        return Err("it exists already; a restore writes only into a new list or, with --into-same-list, into the list the tasks vanished from".into());
    }
    match root.create_dir(name) {
        Ok(d) => Ok((root, d)),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_new_lists_name_carries_the_time_in_utc() {
        // 2026-11-28T16:40:01.123Z
        let ms = 1_795_884_001_123;
        assert_eq!(format_time(ms), "2026-11-28T16:40:01.123Z");
        assert_eq!(new_list_name("plan", ms), "plan-restored-20261128-164001");
        assert!(is_list_name(&new_list_name("plan", ms)));
        assert!(!is_list_name("a/b") && !is_list_name("") && !is_list_name("a.b"));
    }

    #[test]
    fn a_new_list_whose_lock_cannot_be_taken_is_removed_again() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, made) = create_list(tmp.path(), "back").unwrap();
        // A `.lock` that is a link: the lock is refused, and never taken through it.
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::write(&elsewhere, "keep").unwrap();
        std::os::unix::fs::symlink(&elsewhere, tmp.path().join("back/.lock")).unwrap();
        let e = lock_target(&made, Some((&root, "back"))).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(!tmp.path().join("back").exists(), "the new folder is gone");
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep");
        // A list that was there before is never removed.
        let (_, same) = create_list(tmp.path(), "same").unwrap();
        std::os::unix::fs::symlink(&elsewhere, tmp.path().join("same/.lock")).unwrap();
        assert!(lock_target(&same, None).is_err());
        assert!(tmp.path().join("same/.lock").is_symlink());
    }
}
