//! The shared folder of a race where each target keeps its own tasks ([`crate::own`]): what
//! the driver sees of it, and what each target did to the other's files.
//!
//! The driver sees the folder three ways. A **watcher** thread polls it every
//! [`POLL`] for the whole run (every setup, the race, the settle phase, the final listings)
//! and records each change of the kind of `.lock` and `.highwatermark` (missing, empty,
//! JSON, not JSON, a folder) and each task file (`*.json`) that disappears, with the phase
//! it happened in; a state that lasts less than a poll can be missed, so its counts are
//! "seen", never "all". **Snapshots** of every file (its kind, and for a task file the
//! subject it holds) are taken between phases: before anything ran, after each target's
//! setup, after the race, after the settle phase, and at the end. Each target writes its
//! subjects with a tag of its own (`A: `, `B: `, ...), so a task file's owner is read from
//! its content, whoever's naming it follows.
//!
//! Each target's setup runs alone, one after the other: what changed in the folder while
//! target B's setup ran was done by B (or by a target's process acting between requests,
//! which the report says when a target's sessions are processes). That is the evidence for
//! "B deleted A's `.lock`": A's setup left an empty `.lock` and B's setup, running alone,
//! removed it. During the race every target writes at once, and a change is put on a target
//! only by what it was seen doing alone ([`Effect`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How often the watcher looks at the folder.
pub const POLL: Duration = Duration::from_millis(2);
/// The files of the list that are not tasks and that both products may write.
pub const SPECIAL: [&str; 2] = [".lock", ".highwatermark"];

/// What a file is, as far as another program can tell by reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    Missing,
    Empty,
    Json,
    NotJson,
    Folder,
}

impl FileKind {
    pub fn words(self) -> &'static str {
        match self {
            FileKind::Missing => "missing",
            FileKind::Empty => "empty",
            FileKind::Json => "JSON",
            FileKind::NotJson => "not JSON",
            FileKind::Folder => "a folder",
        }
    }
}

/// The kind of the file at `path`, and its bytes when it is a file.
pub fn read_kind(path: &Path) -> (FileKind, Vec<u8>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return (FileKind::Missing, Vec::new());
    };
    if meta.is_dir() {
        return (FileKind::Folder, Vec::new());
    }
    let Ok(bytes) = std::fs::read(path) else {
        // Gone between the two calls.
        return (FileKind::Missing, Vec::new());
    };
    if bytes.is_empty() {
        (FileKind::Empty, bytes)
    } else if serde_json::from_slice::<serde_json::Value>(&bytes).is_ok() {
        (FileKind::Json, bytes)
    } else {
        (FileKind::NotJson, bytes)
    }
}

/// Whether a name in the list folder is a task file of some program: `*.json`, not hidden.
pub fn is_task_like(name: &str) -> bool {
    name.ends_with(".json") && !name.starts_with('.')
}

/// The tag target number `t` puts before its subjects: `A: `, `B: `, ...
pub fn tag(t: usize) -> String {
    format!("{}: ", letter(t))
}

/// Target number `t`'s letter.
pub fn letter(t: usize) -> char {
    (b'A' + (t % 26) as u8) as char
}

/// The target whose tag a subject carries.
pub fn owner_of_subject(subject: &str, targets: usize) -> Option<usize> {
    (0..targets).find(|&t| subject.starts_with(&tag(t)))
}

/// One file of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: FileKind,
    /// A task file's `subject`, when it parses to an object with one.
    pub subject: Option<String>,
    /// The first bytes of a special file, as text.
    pub preview: Option<String>,
}

/// Every entry of the list folder at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub files: BTreeMap<String, Entry>,
}

impl Snapshot {
    pub fn take(folder: &Path) -> Snapshot {
        let mut files = BTreeMap::new();
        let Ok(entries) = std::fs::read_dir(folder) else {
            return Snapshot { files };
        };
        for e in entries.flatten() {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let (kind, bytes) = read_kind(&e.path());
            if kind == FileKind::Missing {
                continue;
            }
            let subject = if is_task_like(&name) && kind == FileKind::Json {
                serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|v| v.get("subject")?.as_str().map(str::to_string))
            } else {
                None
            };
            let preview = SPECIAL.contains(&name.as_str()).then(|| {
                let text = String::from_utf8_lossy(&bytes);
                let text = text.trim();
                let mut p: String = text.chars().take(60).collect();
                if text.chars().count() > 60 {
                    p.push('…');
                }
                p
            });
            files.insert(
                name,
                Entry {
                    kind,
                    subject,
                    preview,
                },
            );
        }
        Snapshot { files }
    }

    pub fn kind(&self, name: &str) -> FileKind {
        self.files.get(name).map_or(FileKind::Missing, |e| e.kind)
    }

    /// The task files (`*.json`, not hidden) that are regular files.
    pub fn task_files(&self) -> impl Iterator<Item = (&String, &Entry)> {
        self.files
            .iter()
            .filter(|(n, e)| is_task_like(n) && e.kind != FileKind::Folder)
    }
}

/// A change of a special file's kind the watcher saw, in a phase, and how often.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeenChange {
    pub file: &'static str,
    pub phase: usize,
    pub from: FileKind,
    pub to: FileKind,
}

/// A task file that disappeared, in a phase, and when.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenRemoval {
    pub file: String,
    pub phase: usize,
    /// Since the phase began.
    pub after: Duration,
}

/// What the watcher saw.
#[derive(Debug, Clone, Default)]
pub struct WatchLog {
    pub changes: BTreeMap<SeenChange, usize>,
    pub removals: Vec<SeenRemoval>,
}

struct Shared {
    phase: AtomicUsize,
    stop: AtomicBool,
    /// When the current phase began, in microseconds since the watcher started.
    phase_began_us: AtomicUsize,
}

/// The watcher thread; stopped and joined when finished or dropped, so no thread outlives
/// a run that failed half-way.
pub struct Watcher {
    shared: Arc<Shared>,
    started: Instant,
    handle: Option<JoinHandle<WatchLog>>,
}

impl Watcher {
    pub fn start(folder: PathBuf) -> Watcher {
        let shared = Arc::new(Shared {
            phase: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            phase_began_us: AtomicUsize::new(0),
        });
        let started = Instant::now();
        let sh = Arc::clone(&shared);
        let handle = std::thread::spawn(move || watch(&folder, &sh, started));
        Watcher {
            shared,
            started,
            handle: Some(handle),
        }
    }

    /// Marks the start of phase `p`.
    pub fn phase(&self, p: usize) {
        // One more look in the old phase first would need the thread; a state that lasts
        // less than a poll across the boundary may be put in either phase.
        self.shared.phase_began_us.store(
            self.started.elapsed().as_micros() as usize,
            Ordering::SeqCst,
        );
        self.shared.phase.store(p, Ordering::SeqCst);
    }

    pub fn finish(mut self) -> WatchLog {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> WatchLog {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .map(|h| h.join().expect("the watcher does not panic"))
            .unwrap_or_default()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

fn special_kinds(folder: &Path) -> [FileKind; 2] {
    SPECIAL.map(|n| read_kind(&folder.join(n)).0)
}

fn task_names(folder: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_task_like(n))
        .collect()
}

fn watch(folder: &Path, sh: &Shared, started: Instant) -> WatchLog {
    let mut log = WatchLog::default();
    let mut kinds = special_kinds(folder);
    let mut names = task_names(folder);
    loop {
        let stopping = sh.stop.load(Ordering::SeqCst);
        let phase = sh.phase.load(Ordering::SeqCst);
        let now = special_kinds(folder);
        for (i, (&before, &after)) in kinds.iter().zip(&now).enumerate() {
            if before != after {
                *log.changes
                    .entry(SeenChange {
                        file: SPECIAL[i],
                        phase,
                        from: before,
                        to: after,
                    })
                    .or_default() += 1;
            }
        }
        kinds = now;
        let now_names = task_names(folder);
        let began = Duration::from_micros(sh.phase_began_us.load(Ordering::SeqCst) as u64);
        for gone in names.difference(&now_names) {
            log.removals.push(SeenRemoval {
                file: gone.clone(),
                phase,
                after: started.elapsed().saturating_sub(began),
            });
        }
        names = now_names;
        if stopping {
            return log;
        }
        std::thread::sleep(POLL);
    }
}

/// How a special file stood at one moment of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// "before the run", "after A's setup", "after the race", "at the end", ...
    pub when: String,
    pub kind: FileKind,
    /// Its first bytes, when it held any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// Changes of a special file's kind the watcher saw in one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindChange {
    pub during: String,
    pub from: FileKind,
    pub to: FileKind,
    /// How many times it was seen (a state shorter than a poll can be missed).
    pub seen: usize,
}

/// One special file of the list (`.lock`, `.highwatermark`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecialFile {
    pub file: String,
    pub states: Vec<FileState>,
    pub changes: Vec<KindChange>,
}

/// One thing a target did to another target's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    /// The target that did it (its name), or `null` when the evidence cannot tell.
    pub by: Option<String>,
    /// The target whose file it was.
    pub on: String,
    /// `deleted`, `replaced`, `removed`.
    pub what: String,
    /// `.lock`, `.highwatermark`, or "task files".
    pub file: String,
    /// "during B's setup, alone", "during the race", ...
    pub when: String,
    /// How many files (or times, for a special file).
    pub count: usize,
    /// Up to five of the files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    pub evidence: String,
}

/// Task files on disk that one target's final listing does not show, by whose they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hidden {
    /// The target whose listing it is.
    pub listing: String,
    /// The target the files belong to (by the tag of the subject they hold), or `null`.
    pub owner: Option<String>,
    pub files: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// One finding of the check of the shared folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckFinding {
    pub kind: String,
    pub file: String,
    pub message: String,
}

/// `taskproof check` of the shared list folder after the race.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedCheck {
    /// The folder as `taskproof check` was given it.
    pub folder: String,
    /// The layout it detected, and the tasks it read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    pub tasks: usize,
    pub findings: Vec<CheckFinding>,
    /// Why the check could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Runs the audit `taskproof check DIR` runs on the list folder.
pub fn check_folder(folder: &Path) -> SharedCheck {
    let shown = format!("{}/", crate::workload::LIST);
    match taskproof_check::run::run(folder, false, None, taskproof_check::Mode::Check) {
        Ok(r) => SharedCheck {
            folder: shown,
            layout: r.lists.first().map(|l| l.layout.as_str().to_string()),
            tasks: r.task_count(),
            findings: r
                .findings
                .iter()
                .map(|f| CheckFinding {
                    kind: f.kind.as_str().to_string(),
                    file: f.file.clone(),
                    message: f.message.clone(),
                })
                .collect(),
            error: None,
        },
        Err(e) => SharedCheck {
            folder: shown,
            layout: None,
            tasks: 0,
            findings: Vec::new(),
            error: Some(e.to_string()),
        },
    }
}

/// Everything the report says about the shared folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilesReport {
    /// The targets with their letters and layouts: "A = reference (claude-code)".
    pub targets: Vec<String>,
    pub special: Vec<SpecialFile>,
    pub effects: Vec<Effect>,
    pub hidden: Vec<Hidden>,
    /// Another target's tasks a target's final listing shows (left out of its own check).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shown: Vec<Shown>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<SharedCheck>,
}

/// Tasks of another target (by their subjects' tag) that a target's final listing shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    pub listing: String,
    pub owner: String,
    pub tasks: usize,
    /// Up to five of their ids, as the listing gave them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_tags() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        assert_eq!(read_kind(&p).0, FileKind::Missing);
        std::fs::write(&p, "").unwrap();
        assert_eq!(read_kind(&p).0, FileKind::Empty);
        std::fs::write(&p, "{\"pid\": 1}").unwrap();
        assert_eq!(read_kind(&p).0, FileKind::Json);
        std::fs::write(&p, "{\"pid\"").unwrap();
        assert_eq!(read_kind(&p).0, FileKind::NotJson);
        assert_eq!(owner_of_subject("B: w0-1", 2), Some(1));
        assert_eq!(owner_of_subject("C: w0-1", 2), None);
        assert!(is_task_like("T-1.json") && !is_task_like(".lock") && !is_task_like("1.txt"));
    }
}
