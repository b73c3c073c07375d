//! Journals whose list folder is gone (docs/check.md, "Lists under agent teams"): the
//! hook journals a list under its folder's name, so a folder renamed or removed leaves a
//! journal that no list folder answers to. Claude Code with agent teams on renames a
//! session's own list `tasks/<session id>` to its team's `tasks/session-<8 hex>` when it
//! makes the team and the first exists (read in 2.1.332's `initializeSessionTeam`).
//!
//! When every task the journal had live is in one other list of the same folder, under the
//! same name and byte for byte, the list **moved** there: a `moved` finding names where, and
//! nothing vanished. Otherwise the folder went with its tasks: each is `vanished` (S14), and
//! `--restore` writes them into a new list beside where the folder was.

use std::path::{Path, PathBuf};

use crate::discover::ListLocation;
use crate::finding::{Finding, FindingKind};
use crate::journal::{self, JOURNAL_DIR, Journal};
use crate::vanish::{self, Folder};
use taskproof_store::Dir;

/// A journal whose list folder is gone.
#[derive(Debug)]
pub struct Gone {
    /// Where the list folder was.
    pub location: ListLocation,
    pub journal: Journal,
    /// The list its live tasks are in now, when they all are in one.
    pub moved_to: Option<String>,
    /// How many tasks the journal had live.
    pub live: usize,
}

/// The journals of the folder of lists `root` that no list of `lists` answers to, and which
/// knew live tasks.
pub fn gone(root: &Path, lists: &[ListLocation]) -> Vec<Gone> {
    let Ok(entries) = std::fs::read_dir(root.join(JOURNAL_DIR)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let list = n.strip_suffix(".jsonl")?;
            (!list.starts_with('.')).then(|| list.to_string())
        })
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let location = ListLocation::in_root(root, &name);
        // A folder of that name that is not a list (a file, a link) is the audit's to name.
        if lists.iter().any(|l| l.name == name) || location.path.symlink_metadata().is_ok() {
            continue;
        }
        let path = root.join(JOURNAL_DIR).join(format!("{name}.jsonl"));
        let Ok(Some(j)) = journal::read(&path, &name) else {
            continue;
        };
        let live: Vec<(&String, u64)> = j
            .files
            .iter()
            .filter_map(|(f, lives)| {
                let l = lives.last()?;
                (l.is_alive() && l.restored_into.is_none()).then_some((f, l.hash))
            })
            .collect();
        if live.is_empty() {
            continue;
        }
        let last = j.last_run.unwrap_or(0);
        let moved_to = lists
            .iter()
            .find(|other| {
                let Ok(dir) = other.open() else {
                    return false;
                };
                live.iter().all(|(f, h)| holds(&dir, f, *h)) && journaled_since(other, last)
            })
            .map(|l| l.name.clone());
        out.push(Gone {
            location,
            live: live.len(),
            journal: j,
            moved_to,
        });
    }
    out
}

/// Whether the hook began journaling `list` only after `at` (or never did): a list it
/// journaled while the gone one was still in use was not where that one went, even if it
/// holds the same bytes.
fn journaled_since(list: &ListLocation, at: u64) -> bool {
    let Some(path) = journal::path_for(&list.path, &list.name) else {
        return true;
    };
    match journal::read(&path, &list.name) {
        Ok(Some(j)) => j
            .files
            .values()
            .filter_map(|lives| lives.first())
            .all(|l| l.seen_at >= at),
        _ => true,
    }
}

/// Whether the list folder `dir` holds `file` with the bytes of hash `h`.
fn holds(dir: &Dir, file: &str, h: u64) -> bool {
    dir.read(file)
        .is_ok_and(|bytes| journal::hash(file, &bytes) == h)
}

/// What to say about a journal whose folder is gone.
pub fn findings(g: Gone, restore_hint: &str) -> Vec<Finding> {
    let list = &g.location.name;
    let path: PathBuf = g.journal.path.clone();
    match &g.moved_to {
        Some(to) => vec![Finding::new(
            list,
            ".",
            FindingKind::Moved,
            format!(
                "the list folder {} is gone, and all {} tasks its journal had live are in the list {to}, each under the same name and byte for byte: the list moved there, nothing vanished (Claude Code with agent teams on renames a session's list to its team's, session-<8 hex>, when it makes the team); the journal {} keeps the old name, and the hook journals {to} under its own from its next run; remove the old journal when you no longer need its history",
                g.location.path.display(),
                g.live,
                path.display()
            ),
        )],
        None => {
            let mut out = vec![Finding::new(
                list,
                ".",
                FindingKind::Vanished,
                format!(
                    "the list folder {} is gone with the {} tasks its journal {} had live, and no other list here holds them",
                    g.location.path.display(),
                    g.live,
                    path.display()
                ),
            )];
            // The folder is gone: its layout is the one its journaled file names have.
            let layout = crate::audit::detect_layout(g.journal.files.keys().map(String::as_str));
            out.extend(vanish::findings(
                list,
                layout,
                &Folder::default(),
                Some(&path),
                Ok(Some(g.journal)),
                restore_hint,
            ));
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Observed, lock, record};

    const ONE: &[u8] = br#"{"id":"1","subject":"a","status":"pending","blocks":[],"blockedBy":[]}"#;
    const OTHER: &[u8] =
        br#"{"id":"1","subject":"b","status":"pending","blocks":[],"blockedBy":[]}"#;

    fn journal_of(root: &Path, list: &str, files: &[(&str, &[u8])], at: u64) {
        let files: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(n, b)| (n.to_string(), b.to_vec()))
            .collect();
        let path = root.join(JOURNAL_DIR).join(format!("{list}.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let seen = Observed {
            files: &files,
            ..Observed::default()
        };
        record(lock(&path).unwrap(), list, &root.join(list), &seen, at).unwrap();
    }

    #[test]
    fn a_gone_list_is_judged_in_the_layout_of_its_journaled_files() {
        let tmp = tempfile::tempdir().unwrap();
        let s07 = br#"{"id":1,"subject":"a","status":"pending","blockedBy":[],"blocks":[]}"#;
        journal_of(tmp.path(), "tasks", &[("task_1.json", s07)], 10);
        let g = gone(tmp.path(), &[]).into_iter().next().unwrap();
        let f = findings(g, "hint");
        assert_eq!(f[1].file, "task_1.json");
        assert!(f[1].message.starts_with("task 1 \"a\""), "{}", f[1].message);
    }

    #[test]
    fn a_folder_renamed_with_its_tasks_moved_and_one_removed_vanished() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        journal_of(
            root,
            "0675e12e-aaaa-4bbb-8ccc-000000000001",
            &[("1.json", ONE)],
            10,
        );
        std::fs::create_dir(root.join("session-0675e12e")).unwrap();
        std::fs::write(root.join("session-0675e12e/1.json"), ONE).unwrap();
        journal_of(root, "plan", &[("1.json", OTHER)], 10);
        let lists = vec![ListLocation::in_root(root, "session-0675e12e")];
        let g = gone(root, &lists);
        assert_eq!(g.len(), 2, "{g:?}");
        assert_eq!(g[0].moved_to.as_deref(), Some("session-0675e12e"));
        let mut g = g.into_iter();
        let (moved, plan) = (g.next().unwrap(), g.next().unwrap());
        assert_eq!(plan.location.name, "plan");
        assert_eq!(plan.moved_to, None);
        let f = findings(moved, "hint");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, FindingKind::Moved);
        let f = findings(plan, "taskproof check --restore ROOT");
        assert_eq!(f[0].kind, FindingKind::Vanished);
        assert_eq!(f[1].file, "1.json");
        assert!(
            f[1].message
                .contains("restore it with `taskproof check --restore ROOT`")
        );
        // A list the hook journaled while the old one was in use is not where it went.
        journal_of(root, "session-0675e12e", &[("1.json", ONE)], 5);
        assert_eq!(gone(root, &lists)[0].moved_to, None);
        std::fs::remove_dir_all(root.join(JOURNAL_DIR)).unwrap();
        journal_of(
            root,
            "0675e12e-aaaa-4bbb-8ccc-000000000001",
            &[("1.json", ONE)],
            10,
        );
        journal_of(root, "session-0675e12e", &[("1.json", ONE)], 20);
        assert_eq!(
            gone(root, &lists)[0].moved_to.as_deref(),
            Some("session-0675e12e")
        );
        // Other bytes under the name are not the task: not moved.
        std::fs::write(root.join("session-0675e12e/1.json"), b"{}").unwrap();
        assert_eq!(gone(root, &lists)[0].moved_to, None);
    }
}
