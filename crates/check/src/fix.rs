//! `--fix`: the repairs that lose nothing, made under the list's lock with whole-file writes.
//!
//! The fixer takes the same `.lock` the reference store takes ([`Dir::lock`]), so a running
//! `taskproof serve` and the fixer exclude each other; with the lock held, a `.tmp` is
//! certainly stale and a `.journal` is certainly abandoned. It then audits the list again
//! under the lock and repairs what that audit found, not what an earlier read saw. Each task
//! file is read once more right before it is rewritten and left alone if its bytes changed
//! since the audit (a writer that ignores the lock, such as Claude Code itself); the fix of
//! that file is reported as skipped and a later run picks it up.
//!
//! A repair edits the file's JSON in place: it adds or removes one id in `blocks` or
//! `blockedBy`, in the form the layout writes ids, and keeps every other field and its order.
//! Repairs are idempotent: a second run finds nothing left to repair. The fixer never deletes
//! a task file, never breaks a cycle, never touches a link (nor what it points to).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::CheckError;
use crate::audit::{self, ListAudit, Locking};
use crate::discover::ListLocation;
use crate::finding::{EdgeField, Repair};
use taskproof_core::layout;
use taskproof_core::protocol::Layout;
use taskproof_core::task::TaskId;
use taskproof_store::{
    Dir, HIGHWATERMARK_NAME, LOCK_NAME, ReadError, parse_watermark, replay_journal,
};

/// What became of one repair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairOutcome {
    /// Made (or, in a dry run, would be made).
    Done,
    /// Not made, and why.
    Skipped(String),
}

/// One repair of one list and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub list: String,
    pub repair: Repair,
    pub outcome: RepairOutcome,
}

/// The repairs an audit calls for, each once, in a stable order.
pub fn plan(audit: &ListAudit) -> Vec<Repair> {
    let mut repairs: Vec<Repair> = audit
        .findings
        .iter()
        .filter_map(|f| f.repair.clone())
        .collect();
    repairs.sort();
    repairs.dedup();
    repairs
}

/// Repairs one list: takes its lock, replays an abandoned journal, removes stale temporary
/// files, audits again and repairs the task files and the high-watermark. Returns the changes
/// and the audit of the list as it was left.
pub fn fix_list(
    location: &ListLocation,
    layout: Option<Layout>,
) -> Result<(Vec<Change>, ListAudit), CheckError> {
    let dir = location.open()?;
    let io = |source| CheckError::io(location.path.clone(), source);
    let _guard = dir.lock(LOCK_NAME).map_err(io)?;
    let layout = match layout {
        Some(l) => l,
        None => location.detect_layout(&dir)?,
    };
    let mut changes = Vec::new();
    let mut change = |repair: Repair, outcome: RepairOutcome| {
        changes.push(Change {
            list: location.name.clone(),
            repair,
            outcome,
        })
    };

    // First what the store itself would do on taking the lock: finish or forget what a dead
    // writer left, so the audit below judges the tasks as they really are.
    let first = audit::audit_dir(&dir, &location.name, layout, Locking::Held).map_err(io)?;
    for repair in plan(&first) {
        match &repair {
            Repair::ReplayJournal => match replay_journal(&dir, true) {
                Ok(()) => change(repair, RepairOutcome::Done),
                Err(e) => change(repair, RepairOutcome::Skipped(e.to_string())),
            },
            Repair::FinishAuditRecord => match taskproof_store::audit::recover(&dir, true) {
                Ok(()) => change(repair, RepairOutcome::Done),
                Err(e) => change(repair, RepairOutcome::Skipped(e.to_string())),
            },
            Repair::RemoveTemp { name } => {
                let live = name
                    .strip_prefix(".tmp.")
                    .and_then(|r| r.split_once('.'))
                    .and_then(|(pid, _)| pid.parse().ok())
                    .is_some_and(audit::process_alive);
                if live {
                    change(
                        repair,
                        RepairOutcome::Skipped("its writer is running again".into()),
                    );
                    continue;
                }
                match dir.remove(name) {
                    Ok(_) => change(repair, RepairOutcome::Done),
                    Err(e) => change(repair, RepairOutcome::Skipped(e.to_string())),
                }
            }
            _ => {}
        }
    }

    let audit = audit::audit_dir(&dir, &location.name, layout, Locking::Held).map_err(io)?;
    let mut by_file: BTreeMap<String, Vec<Repair>> = BTreeMap::new();
    for repair in plan(&audit) {
        match &repair {
            Repair::AddEdge { file, .. } | Repair::RemoveRef { file, .. } => {
                by_file.entry(file.clone()).or_default().push(repair)
            }
            Repair::RaiseHighwatermark { to } => {
                let outcome = raise_highwatermark(&dir, *to).unwrap_or_else(|| {
                    RepairOutcome::Skipped(format!("it is already {to} or more"))
                });
                change(repair, outcome);
            }
            // Done above; whatever is left was skipped there and said so. Restores are
            // `--restore`'s, never a finding's repair.
            Repair::ReplayJournal
            | Repair::FinishAuditRecord
            | Repair::RemoveTemp { .. }
            | Repair::Restore { .. }
            | Repair::RestoreHighwatermark { .. }
            | Repair::RestoreSync { .. }
            | Repair::RestoreJournal { .. }
            | Repair::RestoreVanished
            | Repair::PutInReach { .. } => {}
        }
    }
    for (file, repairs) in by_file {
        let outcome = edit_task_file(&dir, &audit, layout, &file, &repairs);
        for repair in repairs {
            change(repair, outcome.clone());
        }
    }
    dir.sync().map_err(io)?;
    let after = audit::audit_dir(&dir, &location.name, layout, Locking::Held).map_err(io)?;
    Ok((changes, after))
}

/// The changes `--fix` would make, from an audit made without the lock.
pub fn dry_run(audit: &ListAudit) -> Vec<Change> {
    plan(audit)
        .into_iter()
        .map(|repair| Change {
            list: audit.name.clone(),
            repair,
            outcome: RepairOutcome::Done,
        })
        .collect()
}

/// Raises the `.highwatermark` of the list folder `dir` (locked by the caller) to `to`, never
/// lowering it, and writes it as Claude Code does: the number alone, no newline (its reset
/// leaves a 1-byte file for id 3, docs/scenario-format.md "The witness"). `--fix` and
/// `--restore` both write it here. `None` when it already holds `to` or more.
pub(crate) fn raise_highwatermark(dir: &Dir, to: u64) -> Option<RepairOutcome> {
    let current = match dir.read(HIGHWATERMARK_NAME) {
        Ok(b) => parse_watermark(&b),
        Err(ReadError::Missing) => None,
        Err(e) => return Some(RepairOutcome::Skipped(e.to_string())),
    };
    if current.is_some_and(|c| c >= to) {
        return None;
    }
    Some(
        match dir.write_atomic(HIGHWATERMARK_NAME, to.to_string().as_bytes(), true) {
            Ok(()) => RepairOutcome::Done,
            Err(e) => RepairOutcome::Skipped(e.to_string()),
        },
    )
}

/// Applies every repair of one task file, in one whole-file write.
fn edit_task_file(
    dir: &Dir,
    audit: &ListAudit,
    layout: Layout,
    file: &str,
    repairs: &[Repair],
) -> RepairOutcome {
    let Some(seen) = audit.tasks.iter().find(|t| t.name == file) else {
        return RepairOutcome::Skipped("the file is no longer a readable task".into());
    };
    let bytes = match dir.read(file) {
        Ok(b) => b,
        Err(e) => return RepairOutcome::Skipped(format!("cannot be read again: {e}")),
    };
    if bytes != seen.bytes {
        return RepairOutcome::Skipped(
            "the file changed since it was read; run check again".into(),
        );
    }
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return RepairOutcome::Skipped("the file is no longer valid JSON".into());
    };
    for r in repairs {
        match r {
            Repair::AddEdge { field, id, .. } => edit_edges(&mut value, layout, *field, *id, true),
            Repair::RemoveRef { field, id, .. } => {
                edit_edges(&mut value, layout, *field, *id, false)
            }
            _ => {}
        }
    }
    let mut out = serde_json::to_vec_pretty(&value).expect("json values serialize");
    out.push(b'\n');
    match dir.write_atomic(file, &out, true) {
        Ok(()) => RepairOutcome::Done,
        Err(e) => RepairOutcome::Skipped(e.to_string()),
    }
}

/// Adds `id` to, or removes it from, one edge list of a task object, keeping the rest.
fn edit_edges(task: &mut Value, layout: Layout, field: EdgeField, id: TaskId, add: bool) {
    let Some(obj) = task.as_object_mut() else {
        return;
    };
    let list = obj
        .entry(field.key())
        .or_insert_with(|| Value::Array(Vec::new()));
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    let Some(items) = list.as_array_mut() else {
        return;
    };
    if add {
        if !items.iter().any(|v| layout::id_of(v) == Some(id)) {
            items.push(layout::id_value(layout, id));
        }
    } else {
        items.retain(|v| layout::id_of(v) != Some(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::FindingKind;
    use serde_json::json;

    #[test]
    fn a_file_that_changed_since_the_audit_is_not_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        std::fs::write(
            p.join("1.json"),
            r#"{"id":"1","subject":"a","status":"pending","blocks":["2"]}"#,
        )
        .unwrap();
        std::fs::write(
            p.join("2.json"),
            r#"{"id":"2","subject":"b","status":"pending"}"#,
        )
        .unwrap();
        let dir = Dir::open_root(p).unwrap();
        let a = audit::audit_dir(&dir, "l", Layout::ClaudeCode, Locking::Held).unwrap();
        assert_eq!(a.findings[0].kind, FindingKind::HalfEdge);
        // Another writer, one that ignores the lock, rewrites the task in between.
        let theirs = r#"{"id":"2","subject":"b2","status":"in_progress"}"#;
        std::fs::write(p.join("2.json"), theirs).unwrap();
        let repairs = plan(&a);
        let outcome = edit_task_file(&dir, &a, Layout::ClaudeCode, "2.json", &repairs);
        assert!(matches!(outcome, RepairOutcome::Skipped(_)), "{outcome:?}");
        assert_eq!(std::fs::read_to_string(p.join("2.json")).unwrap(), theirs);
    }

    #[test]
    fn edits_keep_the_layouts_id_form_and_are_idempotent() {
        let mut t = json!({"id": 2, "subject": "s", "blockedBy": [1, 9], "x": {"y": 1}});
        edit_edges(&mut t, Layout::S07, EdgeField::Blocks, TaskId(3), true);
        edit_edges(&mut t, Layout::S07, EdgeField::Blocks, TaskId(3), true);
        edit_edges(&mut t, Layout::S07, EdgeField::BlockedBy, TaskId(9), false);
        assert_eq!(
            t,
            json!({"id": 2, "subject": "s", "blockedBy": [1], "x": {"y": 1}, "blocks": [3]})
        );
        let mut c = json!({"id": "2", "blocks": null});
        edit_edges(
            &mut c,
            Layout::ClaudeCode,
            EdgeField::Blocks,
            TaskId(3),
            true,
        );
        assert_eq!(c, json!({"id": "2", "blocks": ["3"]}));
    }
}
