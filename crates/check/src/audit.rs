//! The audit of one list folder: read every file the way the strict store would (never
//! through a link), judge each task file on its own (S15, S17), then judge the list as a
//! whole through [`taskproof_core::graph::Graph`] (S1, S5–S8, S10) and the store's own files (S14,
//! S18; the judging itself is [`super::judge`]).
//!
//! Reading takes no lock and writes nothing. When the list's `.lock` exists, the audit tries
//! to hold it shared while it reads, so a store that follows the reference store's
//! convention cannot be half-way through a change under it; when a writer holds it, the audit
//! reads anyway and says so ([`ListAudit::busy`]), and leaves temporary files alone, since
//! that writer may own them.
//!
//! Missing ids: a reference to an id no task file holds is judged against the highest id the
//! list is known to have assigned (the larger of `.highwatermark` and the highest task file):
//! at or below it, the id was assigned and its task is gone, so the reference is one a delete
//! left behind (S10, orphan); above it, the id was never assigned (S6, dangling). Ids whose
//! file exists but cannot be read are never called missing.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::fd::OwnedFd;

use rustix::fs::{self as rfs, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use serde_json::Value;

use crate::finding::{Finding, FindingKind, Repair};
use crate::judge::{judge_task_value, judge_tasks, sort_findings};
use taskproof_core::protocol::Layout;
use taskproof_core::task::{Task, TaskId};
use taskproof_store::{Dir, HIGHWATERMARK_NAME, JOURNAL_NAME, LOCK_NAME, ReadError, TMP_NAME};

/// Who holds the list's lock while the audit reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locking {
    /// The caller holds it exclusively (`--fix`): nothing else writes; temporary files are
    /// certainly stale.
    Held,
    /// Try to hold it shared for the read, without creating `.lock`.
    Probe,
}

/// A task file that decoded, as read.
#[derive(Debug, Clone)]
pub struct TaskFile {
    pub name: String,
    pub task: Task,
    /// The file's exact bytes, so a repair can tell whether it changed since.
    pub bytes: Vec<u8>,
}

/// What the audit of one list found.
#[derive(Debug, Clone)]
pub struct ListAudit {
    pub name: String,
    pub layout: Layout,
    /// Task files whose id matches their name, which is what a store sees as the list.
    pub tasks: Vec<TaskFile>,
    /// Ids of every task file name present, readable or not.
    pub present: BTreeSet<TaskId>,
    /// The highest id the list is known to have assigned.
    pub bound: u64,
    /// The `.highwatermark` value, when readable.
    pub highwatermark: Option<u64>,
    pub findings: Vec<Finding>,
    /// Another process held the list's lock while it was read.
    pub busy: bool,
}

impl ListAudit {
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }
}

/// The layout a folder's names suggest: `s07` when it has more `task_{n}.json` files than
/// `{n}.json` files, `claude-code` otherwise (also when empty).
pub fn detect_layout<'a>(names: impl IntoIterator<Item = &'a str>) -> Layout {
    let (mut cc, mut s07) = (0usize, 0usize);
    for n in names {
        if Layout::ClaudeCode.task_id_of(n).is_some() {
            cc += 1;
        } else if Layout::S07.task_id_of(n).is_some() {
            s07 += 1;
        }
    }
    if s07 > cc {
        Layout::S07
    } else {
        Layout::ClaudeCode
    }
}

/// Tries to hold the list's lock shared. `Ok(None)` with `busy` false when there is no lock
/// file (nothing to wait for, and the audit must not create one).
fn probe_lock(dir: &Dir) -> io::Result<(Option<OwnedFd>, bool)> {
    let fd = match rfs::openat(
        dir.as_fd(),
        LOCK_NAME,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        // Absent, or a link (reported as a finding below): there is no lock to honour.
        Err(Errno::NOENT | Errno::LOOP) => return Ok((None, false)),
        Err(e) => return Err(io::Error::from_raw_os_error(e.raw_os_error())),
    };
    match rfs::flock(&fd, FlockOperation::NonBlockingLockShared) {
        Ok(()) => Ok((Some(fd), false)),
        Err(Errno::WOULDBLOCK) => Ok((None, true)),
        Err(e) => Err(io::Error::from_raw_os_error(e.raw_os_error())),
    }
}

/// Whether `name` is a temporary file of the reference store: `.tmp` (written under the
/// lock) or `.tmp.{pid}.{n}` (written without it). Returns the writer's pid for the latter.
fn temp_file(name: &str) -> Option<Option<i32>> {
    if name == TMP_NAME {
        return Some(None);
    }
    let rest = name.strip_prefix(".tmp.")?;
    let (pid, n) = rest.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    Some(Some(pid.parse().ok()?))
}

/// Whether a process with this pid exists (a pid that was reused counts as alive, which
/// only ever keeps a file).
pub(crate) fn process_alive(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(p) => !matches!(rustix::process::test_kill_process(p), Err(Errno::SRCH)),
        None => true,
    }
}

fn link_target(dir: &Dir, name: &str) -> String {
    match rfs::readlinkat(dir.as_fd(), name, Vec::new()) {
        Ok(t) => format!(" to {}", t.to_string_lossy()),
        Err(_) => String::new(),
    }
}

/// Audits the list folder `dir`, named `name`, read in `layout`.
pub fn audit_dir(dir: &Dir, name: &str, layout: Layout, locking: Locking) -> io::Result<ListAudit> {
    let (_shared, busy) = match locking {
        Locking::Held => (None, false),
        Locking::Probe => probe_lock(dir)?,
    };
    let mut entries: Vec<String> = dir.entries()?.into_iter().map(|(n, _)| n).collect();
    entries.sort_by_key(|n| {
        (
            layout.task_id_of(n).map_or(u64::MAX, TaskId::get),
            n.clone(),
        )
    });

    let mut findings = Vec::new();
    let mut present = BTreeSet::new();
    let mut decoded: Vec<TaskFile> = Vec::new();
    let mut by_content_id: BTreeMap<TaskId, Vec<String>> = BTreeMap::new();
    let mut has_journal = false;
    let mut highwatermark_bytes = None;

    for file in &entries {
        let f = |kind, message: String| Finding::new(name, file.clone(), kind, message);
        if let Some(id) = layout.task_id_of(file) {
            let bytes = match dir.read(file) {
                Ok(b) => b,
                // Gone since the listing, or a folder: neither is a task file (S15).
                Err(ReadError::Missing | ReadError::Folder) => continue,
                Err(ReadError::Symlink) => {
                    present.insert(id);
                    let to = link_target(dir, file);
                    findings.push(
                        f(
                            FindingKind::Symlink,
                            format!(
                                "is a symbolic link{to}; a store never reads or writes through it, so task {id} cannot be read"
                            ),
                        )
                        .involving([id]),
                    );
                    continue;
                }
                Err(ReadError::Special) => {
                    present.insert(id);
                    findings.push(
                        f(FindingKind::NotAFile, "is not a regular file".into()).involving([id]),
                    );
                    continue;
                }
                Err(ReadError::Io(e)) => {
                    present.insert(id);
                    findings.push(
                        f(FindingKind::NotAFile, format!("cannot be read: {e}")).involving([id]),
                    );
                    continue;
                }
            };
            present.insert(id);
            let value: Value = match serde_json::from_slice(&bytes) {
                Ok(v) => v,
                Err(e) => {
                    findings.push(
                        f(
                            FindingKind::MalformedJson,
                            format!("is not valid JSON: {e}"),
                        )
                        .involving([id]),
                    );
                    continue;
                }
            };
            let Some(task) = judge_task_value(&value, layout, |kind, message| {
                findings.push(f(kind, message).involving([id]));
            }) else {
                continue;
            };
            by_content_id.entry(task.id).or_default().push(file.clone());
            if task.id != id {
                findings.push(
                    f(
                        FindingKind::IdMismatch,
                        format!(
                            "holds id {:?}, but its name says {id}; a store reads it as corrupt",
                            task.id.to_string()
                        ),
                    )
                    .involving([id, task.id]),
                );
                continue;
            }
            decoded.push(TaskFile {
                name: file.clone(),
                task,
                bytes,
            });
        } else if let Some(pid) = temp_file(file) {
            if busy {
                continue;
            }
            let stale = match pid {
                // `.tmp` is only written under the lock, which nobody else holds now.
                None => true,
                Some(pid) => !process_alive(pid),
            };
            if stale {
                findings.push(
                    f(
                        FindingKind::StaleTemp,
                        "a temporary file left by a writer that died mid-write".into(),
                    )
                    .repair(Repair::RemoveTemp { name: file.clone() }),
                );
            }
        } else if file == JOURNAL_NAME || file == HIGHWATERMARK_NAME || file == LOCK_NAME {
            match dir.entry_type(file)? {
                Some(rfs::FileType::Symlink) => {
                    let to = link_target(dir, file);
                    findings.push(f(
                        FindingKind::Symlink,
                        format!("is a symbolic link{to}; a store never reads or writes through it"),
                    ));
                    continue;
                }
                Some(rfs::FileType::RegularFile) => {}
                Some(_) => {
                    findings.push(f(FindingKind::NotAFile, "is not a regular file".into()));
                    continue;
                }
                None => continue,
            }
            if file == JOURNAL_NAME {
                has_journal = true;
            } else if file == HIGHWATERMARK_NAME {
                highwatermark_bytes = Some(dir.read(file));
            }
        }
    }

    if has_journal && !busy {
        findings.push(
            Finding::new(
                name,
                JOURNAL_NAME,
                FindingKind::InterruptedChange,
                "a change to several files was interrupted; until it is replayed the tasks it touches may disagree".into(),
            )
            .repair(Repair::ReplayJournal),
        );
    }

    for (id, files) in &by_content_id {
        if files.len() > 1 {
            for file in &files[1..] {
                findings.push(
                    Finding::new(
                        name,
                        file.clone(),
                        FindingKind::DuplicateId,
                        format!("holds id {id}, as {} does too", files[0]),
                    )
                    .involving([*id]),
                );
            }
        }
    }

    let highest = present.iter().next_back().map_or(0, |i| i.get());
    let mut highwatermark = None;
    if layout == Layout::ClaudeCode
        && let Some(read) = highwatermark_bytes
    {
        let f = |message: String| {
            Finding::new(
                name,
                HIGHWATERMARK_NAME,
                FindingKind::Highwatermark,
                message,
            )
        };
        match read {
            Ok(bytes) => match parse_highwatermark(&bytes) {
                Some(h) => {
                    highwatermark = Some(h);
                    if h < highest {
                        findings.push(
                            f(format!(
                                "says {h}, below the highest task id {highest}; the next create could reuse an id"
                            ))
                            .repair(Repair::RaiseHighwatermark { to: highest }),
                        );
                    }
                }
                None => findings.push(
                    f(format!(
                        "holds {:?}, not a number; the highest id ever assigned is lost",
                        String::from_utf8_lossy(&bytes)
                    ))
                    .repair(Repair::RaiseHighwatermark { to: highest }),
                ),
            },
            Err(ReadError::Missing) => {}
            Err(e) => findings.push(f(format!("cannot be read: {e}"))),
        }
    }
    let bound = highest.max(highwatermark.unwrap_or(0));

    let tasks: Vec<Task> = decoded.iter().map(|t| t.task.clone()).collect();
    if !busy {
        findings.extend(audit_log_findings(dir, name, &decoded)?);
    }
    findings.extend(judge_tasks(name, layout, &tasks, &present, bound));
    sort_findings(&mut findings, layout);
    Ok(ListAudit {
        name: name.to_string(),
        layout,
        tasks: decoded,
        present,
        bound,
        highwatermark,
        findings,
        busy,
    })
}

/// What is wrong with the list's audit log, if it has one: lines that cannot be read, a
/// change interrupted before its record was written, and tasks that differ from what the
/// log's last record of them says (changed by a writer that does not keep the log).
fn audit_log_findings(dir: &Dir, name: &str, decoded: &[TaskFile]) -> io::Result<Vec<Finding>> {
    use taskproof_store::audit::{AUDIT_NAME, PENDING_NAME, read_log, verify};
    let f = |file: &str, message: String| {
        Finding::new(name, file.to_string(), FindingKind::AuditLog, message)
    };
    let mut out = Vec::new();
    if dir.entry_type(PENDING_NAME)?.is_some() {
        out.push(
            f(
                PENDING_NAME,
                "a change and its audit record were interrupted; the next store operation on the list finishes both".into(),
            )
            .repair(Repair::FinishAuditRecord),
        );
        return Ok(out);
    }
    let bytes = match dir.read(AUDIT_NAME) {
        Ok(b) => b,
        Err(ReadError::Missing) => return Ok(out),
        Err(e) => {
            out.push(f(AUDIT_NAME, format!("cannot be read: {e}")));
            return Ok(out);
        }
    };
    let (records, problems) = read_log(&bytes);
    for (line, what) in problems {
        out.push(f(AUDIT_NAME, format!("line {line}: {what}")));
    }
    let current = decoded
        .iter()
        .map(|t| (t.task.id.to_string(), t.task.to_json()))
        .collect();
    for m in verify(&records, &current) {
        out.push(f(AUDIT_NAME, m));
    }
    Ok(out)
}

/// The high-watermark as the reference store reads it: a number, whitespace around it.
fn parse_highwatermark(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_told_apart_by_their_file_names() {
        assert_eq!(
            detect_layout(["1.json", "2.json", ".lock"]),
            Layout::ClaudeCode
        );
        assert_eq!(detect_layout(["task_1.json", "task_2.json"]), Layout::S07);
        assert_eq!(detect_layout(Vec::<&str>::new()), Layout::ClaudeCode);
    }

    #[test]
    fn only_the_reference_stores_temporary_names_count() {
        assert_eq!(temp_file(".tmp"), Some(None));
        assert_eq!(temp_file(".tmp.123.4"), Some(Some(123)));
        for other in [
            ".tmp.",
            ".tmp.x.1",
            ".tmp.1",
            "1.json.tmp",
            ".1.json.swp",
            "tmp",
        ] {
            assert_eq!(temp_file(other), None, "{other}");
        }
    }

    #[test]
    fn the_current_process_is_alive() {
        assert!(process_alive(std::process::id() as i32));
    }
}
