//! What vanished from a list, judged from its [`journal`] and from what the folder holds
//! (docs/check.md, "What vanished").
//!
//! **With a journal**, a task vanished when the journal's last version of it was not ended by
//! a delete the agent asked for, and its file is gone now (or was found gone and its name now
//! holds other bytes: an id reused after a reset that kept no `.highwatermark`). Each is an S14
//! `vanished` finding saying when the journal last saw the file and when it went (the time a
//! hook run found it gone, or when `.highwatermark` was rewritten after that: Claude Code
//! rewrites it when it resets a list). When the whole list went the way Claude Code's reset of
//! a finished list takes it (every task completed, all gone together, the next id kept), the
//! finding names that cause.
//!
//! **Without one**, the folder is all there is, and a reset and the agent deleting every task
//! leave the same files (measured on 2.1.112, 2.1.211 and 2.1.332: `.lock`, empty, and
//! `.highwatermark` holding the highest id). So an emptied list is an S14 `emptied` finding
//! that says it cannot tell which happened; a folder holding only an empty `.lock` is what
//! 2.1.17 leaves at its reset (it cannot delete tasks, and keeps no `.highwatermark`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::audit::ListAudit;
use crate::finding::{Finding, FindingKind};
use crate::journal::{self, End, Journal, JournalError, Life};
use taskproof_core::protocol::Layout;
use taskproof_core::task::TaskId;
use taskproof_store::audit::format_time;
use taskproof_store::{Dir, HIGHWATERMARK_NAME, LOCK_NAME};

/// The settings entry that makes the hook keep a journal, for the messages.
pub const INSTALL_HINT: &str = "the PostToolUse entry of docs/hooks/settings.json keeps a journal that can tell (docs/check.md, \"The journal\")";

/// What the folder holds now, as far as judging what vanished needs.
#[derive(Debug, Clone, Default)]
pub struct Folder {
    /// Every task file name present, with the hash of its bytes when it could be read.
    pub present: BTreeMap<String, Option<u64>>,
    pub highwatermark: Option<u64>,
    /// When `.highwatermark` was last written, in milliseconds since the epoch.
    pub highwatermark_written: Option<u64>,
    /// When an entry was last created or removed in the folder (its own mtime).
    pub changed: Option<u64>,
    /// Every name in the folder, task files or not.
    pub names: Vec<String>,
    /// `.lock` exists and is empty.
    pub empty_lock: bool,
}

impl Folder {
    /// Reads what the judgement needs from a list folder and its audit.
    pub fn read(dir: &Dir, audit: &ListAudit) -> std::io::Result<Folder> {
        let mut present: BTreeMap<String, Option<u64>> = audit
            .present
            .iter()
            .filter_map(|id| audit.layout.file_name(*id))
            .map(|n| (n, None))
            .collect();
        for t in &audit.tasks {
            present.insert(t.name.clone(), Some(journal::hash(&t.name, &t.bytes)));
        }
        // Task files that did not decode are present too: hash their bytes when readable.
        for (name, h) in present.iter_mut().filter(|(_, h)| h.is_none()) {
            if let Ok(b) = dir.read(name) {
                *h = Some(journal::hash(name, &b));
            }
        }
        let ms = |st: &rustix::fs::Stat| {
            let at = std::time::Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec as u32);
            at.as_millis() as u64
        };
        let stat_ms = |name: &str| -> std::io::Result<Option<(u64, i64)>> {
            Ok(dir.stat(name)?.map(|st| (ms(&st), st.st_size)))
        };
        Ok(Folder {
            present,
            highwatermark: audit.highwatermark,
            highwatermark_written: stat_ms(HIGHWATERMARK_NAME)?.map(|(ms, _)| ms),
            changed: Some(ms(&dir.stat_self()?)),
            names: dir.entries()?.into_iter().map(|(n, _)| n).collect(),
            empty_lock: stat_ms(LOCK_NAME)?.is_some_and(|(_, size)| size == 0),
        })
    }

    fn has_tasks(&self) -> bool {
        !self.present.is_empty()
    }
}

/// One task that vanished: the journal's last version of it.
#[derive(Debug, Clone)]
pub struct Vanished {
    pub life: Life,
    pub id: Option<TaskId>,
    /// Its name holds another task now (a later version the journal saw, or a file with
    /// other bytes): this one is history.
    pub superseded: bool,
}

impl Vanished {
    /// The task's subject and status, read from the bytes of the version a restore would
    /// write back.
    fn summary(&self) -> (Option<String>, Option<String>) {
        let Some(v) = self
            .life
            .restorable()
            .and_then(|r| r.bytes.as_deref())
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        else {
            return (None, None);
        };
        let s = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        };
        (s("subject"), s("status"))
    }
}

/// The tasks the journal says vanished from a folder holding `folder`, in file order (every
/// vanished version, the newest of a file last).
pub fn vanished(j: &Journal, layout: Layout, folder: &Folder) -> Vec<Vanished> {
    let mut out = Vec::new();
    for (file, lives) in &j.files {
        let now = folder.present.get(file);
        for (i, life) in lives.iter().enumerate() {
            let last = i + 1 == lives.len();
            if life.restored_into.is_some() || matches!(life.end, Some((End::Deleted, _))) {
                continue;
            }
            let gone = match (life.end, now) {
                // Live in the journal, and its file is there (whatever its bytes now).
                (None, Some(_)) if last => false,
                (None, None) if last => true,
                // Found gone: vanished unless the same bytes came back under its name (a
                // later version the journal saw, by the rule a compaction keeps too, or the
                // file as it is now).
                (Some((End::Gone, _)), now) => {
                    let here = |h: u64| now == Some(&Some(h));
                    let back = here(life.hash) || life.restorable().is_some_and(|r| here(r.hash));
                    !(journal::came_back(lives, i) || (last && back))
                }
                // An earlier life ended only by a later one's `seen` cannot be: a new life
                // starts only after an end.
                _ => false,
            };
            if gone {
                out.push(Vanished {
                    life: life.clone(),
                    id: layout.task_id_of(file),
                    superseded: !last || now.is_some(),
                });
            }
        }
    }
    out.sort_by_key(|v| {
        (
            v.id.map_or(u64::MAX, TaskId::get),
            v.life.file.clone(),
            v.life.line,
        )
    });
    out
}

/// Whether the journal knows any task of the list at all.
fn knows_tasks(j: &Journal) -> bool {
    j.files.values().any(|v| !v.is_empty())
}

/// The findings about what vanished from one list: from its journal at `journal_path` when
/// there is one, else from the folder's shape. `restore_hint` is the command to show.
pub fn findings(
    list: &str,
    layout: Layout,
    folder: &Folder,
    journal_path: Option<&Path>,
    journal: Result<Option<Journal>, JournalError>,
    restore_hint: &str,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let shown =
        |p: Option<&Path>| p.map_or_else(|| "the journal".into(), |p| p.display().to_string());
    let j = match journal {
        Ok(Some(j)) => j,
        Ok(None) => {
            out.extend(shape(list, layout, folder));
            return out;
        }
        Err(e) => {
            out.push(Finding::new(
                list,
                shown(journal_path),
                FindingKind::Journal,
                format!("cannot {e}; what vanished from this list is judged without it"),
            ));
            out.extend(shape(list, layout, folder));
            return out;
        }
    };
    for p in &j.problems {
        out.push(Finding::new(
            list,
            j.path.display().to_string(),
            FindingKind::Journal,
            format!("line {}: {}", p.line, p.what),
        ));
    }
    if !knows_tasks(&j) {
        out.extend(shape(list, layout, folder));
        return out;
    }
    let gone = vanished(&j, layout, folder);
    let cause = cause(&gone, folder);
    for v in &gone {
        out.push(vanished_finding(
            list,
            v,
            folder,
            cause.as_deref(),
            restore_hint,
        ));
    }
    out
}

fn vanished_finding(
    list: &str,
    v: &Vanished,
    folder: &Folder,
    cause: Option<&str>,
    restore_hint: &str,
) -> Finding {
    let (subject, status) = v.summary();
    let who = match (&v.id, &subject) {
        (Some(id), Some(s)) => format!("task {id} {s:?}"),
        (Some(id), None) => format!("task {id}"),
        (None, _) => format!("the task in {}", v.life.file),
    };
    let status = status.map(|s| format!(" ({s})")).unwrap_or_default();
    let mut m = format!(
        "{who}{status} is gone, and no delete was asked for: the journal last saw it at {}",
        format_time(v.life.last_at)
    );
    // The best time on disk for when the file went, after the journal last saw it:
    // `.highwatermark`'s rewrite (Claude Code writes it at a reset when the next id it keeps
    // is above the file's), else the folder's last change (an entry created or removed in it:
    // the removal itself when nothing came after, as after a reset).
    let after = |t: &u64| *t > v.life.last_at;
    let disk = if v.superseded {
        None
    } else {
        folder
            .highwatermark_written
            .filter(after)
            .map(|t| (t, "at about", "when .highwatermark was rewritten"))
            .or_else(|| {
                folder
                    .changed
                    .filter(after)
                    .map(|t| (t, "by", "the list folder's last change"))
            })
    };
    m += &match (v.life.end, disk) {
        (Some((_, found)), Some((t, word, why))) if t <= found => format!(
            ", and its file went {word} {} ({why}; a hook run found it gone at {})",
            format_time(t),
            format_time(found)
        ),
        (Some((_, found)), _) => {
            format!(", and a hook run found it gone at {}", format_time(found))
        }
        (None, Some((t, word, why))) => {
            format!(", and its file went {word} {} ({why})", format_time(t))
        }
        (None, None) => ", and nothing on disk says when its file went".into(),
    };
    if v.superseded {
        m += &format!("; its name {} now holds another task", v.life.file);
    }
    if let Some(c) = cause.filter(|_| !v.superseded) {
        m += "; ";
        m += c;
    }
    match v.life.restorable() {
        None => {
            m += &format!(
                "; the journal holds no whole version of it ({}), so it cannot be restored",
                passed_over(&v.life)
            );
        }
        Some(r) if r.line != v.life.line => {
            m += &format!(
                "; its last version in the journal is not whole ({}), so a restore writes back the one journaled at {} (line {}): restore it with `{restore_hint}`",
                passed_over(&v.life),
                format_time(r.seen_at),
                r.line
            );
        }
        Some(_) => m += &format!("; restore it with `{restore_hint}`"),
    }
    Finding::new(list, v.life.file.clone(), FindingKind::Vanished, m).involving(v.id)
}

/// The versions of a life a restore passes over, newest first, each with its time, journal
/// line and why it is not whole; at most three are named.
pub fn passed_over(life: &Life) -> String {
    let skipped = life.passed_over();
    let mut parts: Vec<String> = skipped
        .iter()
        .take(3)
        .map(|s| {
            format!(
                "line {}, journaled at {}, is {}",
                s.line,
                format_time(s.seen_at),
                s.flaw
            )
        })
        .collect();
    if skipped.len() > 3 {
        parts.push(format!("and {} more before them", skipped.len() - 3));
    }
    parts.join("; ")
}

/// The known cause, when the tasks that vanished went the way Claude Code's reset of a
/// finished list takes them: the journal's live tasks were all completed, every one of them
/// is gone and the folder holds no task, and the next id was kept (2.1.20 and later) or the
/// folder holds only `.lock` (2.1.17, which keeps no `.highwatermark`).
fn cause(gone: &[Vanished], folder: &Folder) -> Option<String> {
    // The folder holds no task, so every task the journal had live went.
    let current: Vec<&Vanished> = gone.iter().filter(|v| !v.superseded).collect();
    if current.is_empty() || folder.has_tasks() {
        return None;
    }
    let all_completed = current
        .iter()
        .all(|v| v.summary().1.as_deref() == Some("completed"));
    if !all_completed {
        return None;
    }
    let n = current.len();
    let tasks = if n == 1 {
        "its 1 task was completed and went".to_string()
    } else {
        format!("all {n} tasks were completed and went together")
    };
    let highest = current.iter().filter_map(|v| v.id).map(TaskId::get).max()?;
    match folder.highwatermark {
        Some(h) if h >= highest => Some(format!(
            "known cause: Claude Code's reset of a finished list (anthropics/claude-code#38075): {tasks}, and .highwatermark kept the next id ({h})"
        )),
        None if only_lock(folder) => Some(format!(
            "known cause: Claude Code's reset of a finished list (anthropics/claude-code#38075) as 2.1.17 does it: {tasks}, leaving only .lock (no .highwatermark, so its next task takes id 1 again)"
        )),
        _ => None,
    }
}

/// The folder holds an empty `.lock` and nothing else.
fn only_lock(folder: &Folder) -> bool {
    folder.empty_lock && folder.names.iter().all(|n| n == LOCK_NAME)
}

/// What the folder's shape says when there is no journal to ask.
fn shape(list: &str, layout: Layout, folder: &Folder) -> Vec<Finding> {
    if folder.has_tasks() || layout != Layout::ClaudeCode {
        return Vec::new();
    }
    match folder.highwatermark {
        Some(n) if n >= 1 => vec![Finding::new(
            list,
            HIGHWATERMARK_NAME,
            FindingKind::Emptied,
            format!(
                "the list holds no task, and .highwatermark says {n}: {} were deleted or reset; taskproof cannot tell which without a journal, since the agent deleting every task and Claude Code's reset of a finished list (anthropics/claude-code#38075) leave these same files (measured on 2.1.112 to 2.1.332); {INSTALL_HINT}",
                if n == 1 {
                    "the 1 task it had assigned".to_string()
                } else {
                    format!("the tasks of the {n} ids it had assigned")
                }
            ),
        )],
        None if only_lock(folder) => vec![Finding::new(
            list,
            LOCK_NAME,
            FindingKind::Emptied,
            format!(
                "the folder holds only an empty .lock: the shape Claude Code 2.1.17 leaves when it resets a finished list (it cannot delete tasks, and keeps no .highwatermark), so its tasks were most likely reset; how many is unknown without a journal; {INSTALL_HINT}"
            ),
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(present: &[(&str, &[u8])], hwm: Option<u64>, names: &[&str]) -> Folder {
        Folder {
            present: present
                .iter()
                .map(|(n, b)| (n.to_string(), Some(journal::hash(n, b))))
                .collect(),
            highwatermark: hwm,
            highwatermark_written: None,
            changed: None,
            names: names.iter().map(|n| n.to_string()).collect(),
            empty_lock: names.contains(&LOCK_NAME),
        }
    }

    #[test]
    fn an_empty_list_without_a_journal_says_it_cannot_tell_a_reset_from_deletes() {
        let f = shape(
            "l",
            Layout::ClaudeCode,
            &folder(&[], Some(3), &[".lock", ".highwatermark"]),
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, FindingKind::Emptied);
        assert!(
            f[0].message.contains(".highwatermark says 3"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("cannot tell which without a journal"));
        let f = shape("l", Layout::ClaudeCode, &folder(&[], None, &[".lock"]));
        assert_eq!(f[0].file, ".lock");
        assert!(f[0].message.contains("2.1.17"), "{}", f[0].message);
        // An empty folder, or one with tasks, says nothing.
        assert!(shape("l", Layout::ClaudeCode, &folder(&[], None, &[])).is_empty());
        let with_task = folder(&[("1.json", b"{}")], Some(3), &[".lock", "1.json"]);
        assert!(shape("l", Layout::ClaudeCode, &with_task).is_empty());
    }
}
