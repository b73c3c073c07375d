//! What a failing request after a session step shows of the tasks it is about: their files
//! deleted, or kept on disk while the answer no longer shows them (`result::Finding`).
//!
//! The two are different findings and are reported apart. A store that deletes the files
//! loses the tasks (S14, nothing vanishes: Claude Code's reset of a finished list). One that
//! keeps them where the session no longer looks leaves the tasks on disk, out of the agent's
//! reach: Claude Code's `/clear` gives the session a new id, and with it a new, empty list of
//! its own, while the old list's files stay as they were.
//!
//! The runner takes the root's task files just before every session step ([`task_files`]);
//! when a request after it fails, [`finding`] compares them, in the folder the request's list
//! had then, with the disk and the answer now.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use taskproof_core::protocol::{Layout, SESSION_LIST};
use taskproof_report::result::{Finding, FindingKind};

/// Every regular `*.json` file under `root` (links and folders aside), by its path relative
/// to the root, with its bytes: the task files a later finding compares with.
pub(super) fn task_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => walk(root, &path, out),
                Ok(m) if m.is_file() && path.extension().is_some_and(|x| x == "json") => {
                    if let (Ok(rel), Ok(bytes)) = (path.strip_prefix(root), std::fs::read(&path)) {
                        out.insert(rel.display().to_string(), bytes);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The tasks a request is about: every task of its list (`list`), or the one its `id`
/// names; `None` for a request about no existing task (`create`).
pub(super) fn about(request: &Value) -> Option<About> {
    match request.get("op").and_then(Value::as_str)? {
        "list" => Some(About::All),
        "create" => None,
        _ => match request.get("id")? {
            Value::String(id) => Some(About::One(id.clone())),
            other => Some(About::One(other.to_string())),
        },
    }
}

/// See [`about`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum About {
    All,
    One(String),
}

/// The ids of the tasks a protocol answer shows: its `tasks`, or its `task`; none for a
/// failure.
pub(super) fn shown(answer: &Value) -> BTreeSet<String> {
    let id = |t: &Value| t.get("id").and_then(Value::as_str).map(str::to_string);
    let mut out: BTreeSet<String> = answer
        .get("tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(id)
        .collect();
    out.extend(answer.get("task").and_then(id));
    out
}

/// The folder a named list has in the layout: Claude Code's own name for it, or the name as
/// given (a store that accepts only safe names keeps them so).
pub(super) fn folder_of(layout: Layout, list: &str) -> String {
    match layout {
        Layout::ClaudeCode => taskproof_core::layout::claude_code_name(list),
        _ => list.to_string(),
    }
}

/// Whether a request names the session's own list.
pub(super) fn names_session_list(request: &Value) -> bool {
    request.get("list").and_then(Value::as_str) == Some(SESSION_LIST)
}

/// What a failing request shows of the tasks it is about that `folder_before` held just
/// before the session step (`before`: the root's task files then). Deleted, when any of
/// their files is gone now; kept and unseen, when all are still there and the answer
/// (`shown`: the ids it shows) leaves some out; `None` when the folder held none of them or
/// the answer shows them all (the failure is about something else).
pub(super) fn finding(
    layout: Layout,
    root: &Path,
    before: &BTreeMap<String, Vec<u8>>,
    folder_before: &str,
    folder_now: Option<&str>,
    about: &About,
    shown: &BTreeSet<String>,
) -> Option<Finding> {
    let prefix = format!("{folder_before}/");
    let concerned: Vec<(&String, &Vec<u8>, String)> = before
        .iter()
        .filter_map(|(path, bytes)| {
            let name = path.strip_prefix(&prefix)?;
            let id = layout.task_id_of(name)?.to_string();
            let wanted = match about {
                About::All => true,
                About::One(one) => *one == id,
            };
            wanted.then_some((path, bytes, id))
        })
        .collect();
    if concerned.is_empty() {
        return None;
    }
    let finding = |kind, files: Vec<String>, changed: Vec<String>| Finding {
        kind,
        files,
        changed,
        list_before: folder_before.to_string(),
        list_now: folder_now.map(str::to_string),
    };
    let now = |path: &str| match std::fs::symlink_metadata(root.join(path)) {
        Ok(m) if m.is_file() => std::fs::read(root.join(path)).ok(),
        _ => None,
    };
    let deleted: Vec<String> = concerned
        .iter()
        .filter(|(path, _, _)| now(path).is_none())
        .map(|(path, _, _)| path.to_string())
        .collect();
    if !deleted.is_empty() {
        return Some(finding(FindingKind::Deleted, deleted, Vec::new()));
    }
    let unseen: Vec<&(&String, &Vec<u8>, String)> = concerned
        .iter()
        .filter(|(_, _, id)| !shown.contains(id))
        .collect();
    if unseen.is_empty() {
        return None;
    }
    let changed = unseen
        .iter()
        .filter(|(path, bytes, _)| now(path).as_ref() != Some(*bytes))
        .map(|(path, _, _)| path.to_string())
        .collect();
    let files = unseen.iter().map(|(path, _, _)| path.to_string()).collect();
    Some(finding(FindingKind::KeptUnseen, files, changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A root with the session's old list `old` holding two task files, as before a `/clear`.
    fn root_with_old_list() -> (tempfile::TempDir, BTreeMap<String, Vec<u8>>) {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::write(old.join("1.json"), br#"{"id":"1","subject":"a"}"#).unwrap();
        std::fs::write(old.join("2.json"), br#"{"id":"2","subject":"b"}"#).unwrap();
        std::fs::write(old.join(".lock"), b"").unwrap();
        let before = task_files(dir.path());
        (dir, before)
    }

    #[test]
    fn the_root_s_task_files_are_taken_with_their_bytes_and_nothing_else() {
        let (dir, before) = root_with_old_list();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("old/3.json")).unwrap();
        let before_link = task_files(dir.path());
        assert_eq!(before, before_link, "a link is no task file of the store's");
        assert_eq!(
            before.keys().collect::<Vec<_>>(),
            ["old/1.json", "old/2.json"]
        );
        assert_eq!(before["old/1.json"], br#"{"id":"1","subject":"a"}"#);
    }

    /// `/clear` on the session's own list: the files stay, the session reads a new list that
    /// shows nothing. Kept and unseen, naming both lists.
    #[test]
    fn files_kept_that_the_answer_no_longer_shows_are_kept_unseen() {
        let (dir, before) = root_with_old_list();
        let f = finding(
            Layout::ClaudeCode,
            dir.path(),
            &before,
            "old",
            Some("new"),
            &About::All,
            &shown(&json!({"ok": true, "tasks": [], "corrupt": []})),
        )
        .unwrap();
        assert_eq!(f.kind, FindingKind::KeptUnseen);
        assert_eq!(f.files, ["old/1.json", "old/2.json"]);
        assert!(f.changed.is_empty());
        assert_eq!(
            f.words(),
            "files kept, the agent no longer sees them: old/1.json, old/2.json still on disk (unchanged), not in the answer; the list it reads is new now, was old before it"
        );
        // A `get` of one of them that answers not_found: that one alone.
        let one = finding(
            Layout::ClaudeCode,
            dir.path(),
            &before,
            "old",
            Some("new"),
            &About::One("2".into()),
            &shown(&json!({"ok": false, "error": {"kind": "not_found", "message": "x"}})),
        )
        .unwrap();
        assert_eq!(one.files, ["old/2.json"]);
        // A file rewritten since is kept, and said to be changed.
        std::fs::write(dir.path().join("old/1.json"), b"{}").unwrap();
        let f = finding(
            Layout::ClaudeCode,
            dir.path(),
            &before,
            "old",
            None,
            &About::All,
            &shown(&json!({"ok": true, "tasks": [{"id": "2"}]})),
        )
        .unwrap();
        assert_eq!(f.files, ["old/1.json"]);
        assert_eq!(f.changed, ["old/1.json"]);
        assert_eq!(
            f.words(),
            "files kept, the agent no longer sees them: old/1.json still on disk (changed), not in the answer"
        );
    }

    /// The reset of a finished list: the files are gone, whatever the answer shows.
    #[test]
    fn files_gone_are_deleted() {
        let (dir, before) = root_with_old_list();
        std::fs::remove_file(dir.path().join("old/2.json")).unwrap();
        let f = finding(
            Layout::ClaudeCode,
            dir.path(),
            &before,
            "old",
            Some("old"),
            &About::All,
            &shown(&json!({"ok": true, "tasks": [{"id": "1"}]})),
        )
        .unwrap();
        assert_eq!(f.kind, FindingKind::Deleted);
        assert_eq!(f.files, ["old/2.json"]);
        assert_eq!(f.words(), "files deleted: old/2.json gone from disk");
        // A request about task 1 alone is not about the deleted one.
        assert_eq!(
            finding(
                Layout::ClaudeCode,
                dir.path(),
                &before,
                "old",
                None,
                &About::One("1".into()),
                &shown(&json!({"ok": true, "task": {"id": "1"}})),
            ),
            None
        );
    }

    /// A failure that neither explains (the answer shows every task; another folder; a
    /// create) has no finding.
    #[test]
    fn other_failures_have_no_finding() {
        let (dir, before) = root_with_old_list();
        let all = shown(&json!({"ok": true, "tasks": [{"id": "1"}, {"id": "2"}]}));
        let f = |folder: &str, shows: &BTreeSet<String>| {
            finding(
                Layout::ClaudeCode,
                dir.path(),
                &before,
                folder,
                None,
                &About::All,
                shows,
            )
        };
        assert_eq!(f("old", &all), None);
        assert_eq!(f("other", &BTreeSet::new()), None);
        assert_eq!(
            f("ol", &BTreeSet::new()),
            None,
            "a folder's name, not a prefix"
        );
        assert_eq!(about(&json!({"op": "create", "list": "l"})), None);
        assert_eq!(about(&json!({"op": "list", "list": "l"})), Some(About::All));
        assert_eq!(
            about(&json!({"op": "get", "list": "l", "id": "7"})),
            Some(About::One("7".into()))
        );
    }

    #[test]
    fn the_s07_layout_names_its_task_files_its_own_way() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("l")).unwrap();
        std::fs::write(dir.path().join("l/task_1.json"), b"{}").unwrap();
        let before = task_files(dir.path());
        std::fs::remove_file(dir.path().join("l/task_1.json")).unwrap();
        let f = finding(
            Layout::S07,
            dir.path(),
            &before,
            "l",
            None,
            &About::All,
            &BTreeSet::new(),
        )
        .unwrap();
        assert_eq!(f.files, ["l/task_1.json"]);
        assert_eq!(folder_of(Layout::S07, "l"), "l");
        assert_eq!(folder_of(Layout::ClaudeCode, "../x"), "---x");
    }
}
