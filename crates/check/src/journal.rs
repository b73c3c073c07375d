//! The journal the hook keeps of each task list, so that `check` can say which tasks vanished
//! and `check --restore` can give them back (docs/check.md, "The journal").
//!
//! **Where.** Beside the list folder, never in it: `{folder of lists}/.taskproof-journal/
//! {list}.jsonl`, so `~/.claude/tasks/.taskproof-journal/my-project.jsonl` for the list
//! `~/.claude/tasks/my-project`. Claude Code's reset of a finished list deletes task files
//! inside the list folder only, and `check` skips hidden folders when it looks for lists.
//!
//! **What.** JSON Lines. The first line names the format and the list; every other line is one
//! entry with its time (`at`, milliseconds since the epoch) and the task file it is about:
//! `seen` (the file's exact bytes, as `text` or, when not UTF-8, `hex`, with an FNV-1a hash of
//! the name and the bytes, and a `torn` mark when they were not a whole task: see [`Torn`]),
//! `delete` (the agent asked for the delete, or the hook refused a new
//! task and Claude Code took it back), `gone` (a hook run found the file missing with no delete
//! asked for), `restored` (`check --restore` wrote that version back, `into` naming where), and
//! `run` (a hook run saw every live file as journaled). The hook writes an entry only when a
//! file's bytes differ from the version the journal last saw, plus one `run` line.
//!
//! **Crash-safe.** Entries are appended under an flock on the journal file, at the end of its
//! last complete line, so a line a killed writer left half-written is cut by the next append;
//! a reader skips any line that is not a whole entry, and a `seen` entry whose bytes do not
//! match its hash is never taken for a task. Appends are not fsynced: what the journal guards
//! against is another process deleting task files, which the page cache survives, and an fsync
//! per tool call would cost more than the hook's whole budget; a power cut can lose the last
//! entries, never turn a torn one into a task. A hook run takes the flock ([`lock`]) before it
//! reads the list, so runs on one list journal it in the order they read it. A compaction
//! writes a new file whole (fsynced) through one temporary name per journal and renames it
//! over the old.
//!
//! **Versions that are not whole.** A writer that rewrites a task file in place (Claude Code
//! up to 2.1.112 truncates it, then writes) can be caught half-way by a hook run, which then
//! reads it empty or in part. The run marks such a version `torn` ([`Torn`]: its size changed
//! during the read, it is empty, or it does not decode as a task); a version without the mark
//! is whole, and an entry written before the mark existed is judged by its bytes when `check`
//! reads them. Each [`Life`] keeps, beside a last version that is not whole, the latest whole
//! one before it ([`Life::restorable`]): `check --restore` writes that one back, never a torn
//! one.
//!
//! **Bounded.** Once the file is over [`COMPACT_FROM`] and more than half of it is history
//! (versions of a task later superseded, tasks deleted or restored, older `run` lines), the next
//! append compacts it to what `check` and `--restore` need: the last version of each live task
//! (and the last whole one before it, when that one is not whole), each vanished task with its
//! `gone` line, and the last `run` line. So the file stays under
//! twice what it must hold, and never over [`MAX_BYTES`]: past that, the oldest vanished tasks
//! are dropped first, and a list whose live tasks alone exceed it is not journaled (said).
//!
//! A file at the journal's place that is not a taskproof journal, is a link, is from a newer
//! taskproof, or is another list's journal, is never written to.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;
use serde::{Deserialize, Serialize};
use taskproof_store::Dir;

/// The hidden folder beside the lists that holds their journals.
pub const JOURNAL_DIR: &str = ".taskproof-journal";
/// The journal format this taskproof writes and reads.
pub const FORMAT: u64 = 1;
/// A journal smaller than this is never compacted: rewriting it would cost more than reading it.
pub const COMPACT_FROM: u64 = 1 << 20;
/// The most a journal holds after a compaction.
pub const MAX_BYTES: u64 = 32 << 20;
/// The most a journal ever holds: nothing is appended past it. A journal is compacted when
/// more than half of it is history, and a compaction keeps at most [`MAX_BYTES`], so only a
/// list whose live tasks alone exceed that reaches it.
pub const HARD_LIMIT: u64 = 2 * MAX_BYTES;

/// Refuses an append that would take the journal past [`HARD_LIMIT`].
fn within_limit(path: &Path, complete: u64, more: usize) -> Result<(), JournalError> {
    if complete + more as u64 > HARD_LIMIT {
        return Err(JournalError::TooLarge {
            path: path.to_path_buf(),
            bytes: complete,
        });
    }
    Ok(())
}

/// Why a journal could not be used. Each names the file; a bad line is not an error but a
/// [`Problem`] of a journal that is otherwise read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("read the journal {path}: {error}")]
    Io { path: PathBuf, error: io::Error },
    #[error("write the journal {path}: {error}")]
    Write { path: PathBuf, error: io::Error },
    #[error(
        "use the journal {path}: there is no journal there (the hook writes it once installed with its PostToolUse entry, docs/check.md)"
    )]
    Missing { path: PathBuf },
    #[error(
        "use the journal {path}: it is a symbolic link; taskproof never reads or writes through one"
    )]
    Symlink { path: PathBuf },
    #[error(
        "use the journal {path}: line 1 is not a taskproof journal's first line ({why}); the file is left alone"
    )]
    Foreign { path: PathBuf, why: String },
    #[error(
        "use the journal {path}: it is in format {found}, newer than the {FORMAT} this taskproof reads; the file is left alone"
    )]
    Newer { path: PathBuf, found: u64 },
    #[error(
        "use the journal {path}: it is the journal of list {theirs:?} ({folder}), not of {ours:?}; the file is left alone"
    )]
    OtherList {
        path: PathBuf,
        theirs: String,
        folder: String,
        ours: String,
    },
    #[error(
        "write the journal {path}: it holds {bytes} bytes, and the list's live tasks alone take more than the {MAX_BYTES} a compaction keeps; nothing more is journaled"
    )]
    TooLarge { path: PathBuf, bytes: u64 },
}

/// A line of a journal that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based.
    pub line: usize,
    pub what: String,
}

/// The journal of the list folder at `list_dir`: `{parent}/.taskproof-journal/{name}.jsonl`.
/// `None` when the folder has no parent (the file-system root).
pub fn path_for(list_dir: &Path, name: &str) -> Option<PathBuf> {
    // The parent of the folder as the user reaches it: `check .` inside a list names the
    // same journal as `check ~/.claude/tasks/list`.
    let full = list_dir
        .canonicalize()
        .unwrap_or_else(|_| list_dir.to_path_buf());
    let parent = full.parent()?;
    Some(parent.join(JOURNAL_DIR).join(format!("{name}.jsonl")))
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The hash a `seen` entry carries: FNV-1a's 64-bit offset and prime, applied to 8-byte
/// little-endian words instead of single bytes (eight times fewer multiplications: the hook
/// hashes every task file of the list on each run), first of the file's name, then of its
/// bytes, each followed by its length so that no padding can pass for content. Every step is
/// a bijection of the state, so changing any one word always changes the hash. Not for
/// security: it tells a torn or damaged entry from the file it recorded, and a file that
/// changed from one the journal saw. The name is in it so that an entry whose name was
/// damaged does not pass for another task's.
pub fn hash(file: &str, bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    let mut mix = |w: u64| {
        h ^= w;
        h = h.wrapping_mul(PRIME);
    };
    for part in [file.as_bytes(), bytes] {
        let mut words = part.chunks_exact(8);
        for w in &mut words {
            mix(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            mix(u64::from_le_bytes(last));
        }
        mix(part.len() as u64);
    }
    h
}

fn hash_text(h: u64) -> String {
    format!("{h:016x}")
}

fn parse_hash(s: &str) -> Option<u64> {
    (s.len() == 16)
        .then(|| u64::from_str_radix(s, 16).ok())
        .flatten()
}

/// The first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Header {
    taskproof_journal: u64,
    list: String,
    folder: String,
    created: u64,
}

/// One entry as written. Field order is the line's order: the short fields first, the bytes
/// last.
#[derive(Serialize)]
struct Out<'a> {
    at: u64,
    op: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_seen: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    into: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    torn: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hex: Option<String>,
}

impl<'a> Out<'a> {
    fn new(at: u64, op: &'a str, file: Option<&'a str>) -> Out<'a> {
        Out {
            at,
            op,
            file,
            hash: None,
            last_seen: None,
            into: None,
            torn: None,
            text: None,
            hex: None,
        }
    }

    fn line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).expect("journal entries serialize");
        v.push(b'\n');
        v
    }
}

/// A `seen` entry for `file` holding `bytes`, marked `torn` when they were not a whole task.
fn seen_line(at: u64, file: &str, bytes: &[u8], torn: Option<Torn>) -> Vec<u8> {
    let mut out = Out::new(at, "seen", Some(file));
    out.hash = Some(hash_text(hash(file, bytes)));
    out.torn = torn.map(Torn::as_str);
    match std::str::from_utf8(bytes) {
        Ok(text) => out.text = Some(text),
        Err(_) => out.hex = Some(bytes.iter().map(|b| format!("{b:02x}")).collect()),
    }
    out.line()
}

/// One line as read. `T` is what the task bytes are read as: skipped unread by the hook
/// ([`serde::de::IgnoredAny`]), decoded by `check`.
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct In<'a, T> {
    at: u64,
    #[serde(borrow)]
    op: Cow<'a, str>,
    #[serde(default, borrow)]
    file: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    hash: Option<Cow<'a, str>>,
    #[serde(default)]
    last_seen: Option<u64>,
    #[serde(default, borrow)]
    into: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    torn: Option<Cow<'a, str>>,
    #[serde(default)]
    text: Option<T>,
    #[serde(default)]
    hex: Option<T>,
}

/// How a task's life in the journal ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The agent asked for the delete (or the hook refused the new task).
    Deleted,
    /// A hook run found the file missing, with no delete asked for.
    Gone,
}

/// Why the bytes a hook run read of a task file are not a whole task: the mark a `seen`
/// entry carries as `torn`. A run that read them knows; for an entry written before the mark
/// existed, `check` judges the bytes themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Torn {
    /// The file's size changed while it was read: another process was rewriting it, so the
    /// bytes may be part of one write or a mix of two, even when they decode.
    Changing,
    /// The file held no bytes: what a writer that truncates and then writes (Claude Code up
    /// to 2.1.112) leaves between the two.
    Empty,
    /// The bytes are not a task: not JSON, or not a task object (a write cut short).
    Malformed,
    /// A mark this taskproof does not know, written by a later one: not whole either.
    Other,
}

impl Torn {
    /// The mark as the journal writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Torn::Changing => "changing",
            Torn::Empty => "empty",
            Torn::Malformed => "malformed",
            Torn::Other => "other",
        }
    }

    fn parse(s: &str) -> Torn {
        match s {
            "changing" => Torn::Changing,
            "empty" => Torn::Empty,
            "malformed" => Torn::Malformed,
            _ => Torn::Other,
        }
    }

    /// What a hook run read of a task file: `bytes`, from a file whose size was `size` when
    /// it was opened. `decodes` says whether the bytes decode as a task; the hook has decoded
    /// them anyway, so the mark costs it nothing more.
    pub fn of_read(bytes: &[u8], size: i64, decodes: bool) -> Option<Torn> {
        if usize::try_from(size).ok() != Some(bytes.len()) {
            Some(Torn::Changing)
        } else if bytes.is_empty() {
            Some(Torn::Empty)
        } else if !decodes {
            Some(Torn::Malformed)
        } else {
            None
        }
    }

    /// The judgement of bytes alone, for an entry that carries no mark.
    pub fn of_bytes(bytes: &[u8]) -> Option<Torn> {
        if bytes.is_empty() {
            Some(Torn::Empty)
        } else if !crate::locate::decodes_as_task(bytes) {
            Some(Torn::Malformed)
        } else {
            None
        }
    }
}

impl std::fmt::Display for Torn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Torn::Changing => {
                "torn: read while the file was being rewritten (its size changed during the read)"
            }
            Torn::Empty => {
                "empty: what a writer that truncates the file and then writes it leaves between the two"
            }
            Torn::Malformed => "not a task: not JSON, or not a task object (a write cut short)",
            Torn::Other => "marked by a later taskproof as not a whole task",
        })
    }
}

/// Why a version of a task is not one `check --restore` writes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaw {
    /// The bytes were not a whole task when read (marked, or judged from the bytes).
    Torn(Torn),
    /// The journal's entry is damaged: its bytes do not match their hash.
    Damaged,
}

impl std::fmt::Display for Flaw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Flaw::Torn(t) => t.fmt(f),
            Flaw::Damaged => {
                f.write_str("damaged in the journal (its bytes do not match their hash)")
            }
        }
    }
}

/// A version of a task that is not whole, as a life keeps it to explain why it was passed
/// over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// When the journal recorded it.
    pub seen_at: u64,
    /// Its journal line, 1-based.
    pub line: usize,
    pub flaw: Flaw,
}

/// One version of one task, from a `seen` entry to the entry that ended it (if any).
#[derive(Debug, Clone)]
pub struct Life {
    pub file: String,
    /// When the journal recorded this version.
    pub seen_at: u64,
    /// The last time a hook run saw the file with these bytes.
    pub last_at: u64,
    pub hash: u64,
    /// The bytes, when read in full and they match the hash; `None` when damaged (or not read).
    pub bytes: Option<Vec<u8>>,
    /// The journal line of the `seen` entry, 1-based.
    pub line: usize,
    pub end: Option<(End, u64)>,
    /// Where `check --restore` wrote this version back.
    pub restored_into: Option<String>,
    /// Why this version is not whole, when it is not: its `torn` mark, or, read with the task
    /// bytes, what they are (empty, not a task) or that the entry is damaged. Read without
    /// them (the hook), an entry without a mark is taken as whole unless its bytes are empty.
    pub flaw: Option<Flaw>,
    /// When this version is not whole: the latest earlier version of this life that is, the
    /// one `check --restore` writes back instead.
    pub whole_before: Option<Box<Life>>,
    /// The versions between `whole_before` (or the start of the life) and this one, none of
    /// them whole, oldest first.
    pub torn_between: Vec<Skipped>,
    /// Byte ranges in the journal of the lines this life keeps: its `whole_before`'s `seen`,
    /// its own `seen`, and its `gone`.
    keep: Vec<(usize, usize)>,
}

impl Life {
    pub fn is_alive(&self) -> bool {
        self.end.is_none() && self.restored_into.is_none()
    }

    /// Whether this version is a whole task (as far as the journal was read).
    pub fn is_whole(&self) -> bool {
        self.flaw.is_none()
    }

    /// The version `check --restore` writes back of this life: this one when it is whole,
    /// else the latest earlier one that is; `None` when the journal holds no whole version.
    pub fn restorable(&self) -> Option<&Life> {
        if self.is_whole() {
            Some(self)
        } else {
            self.whole_before.as_deref()
        }
    }

    /// The versions newer than [`Life::restorable`] (all, when there is none), none of them
    /// whole, newest first: what a restore passes over, and why.
    pub fn passed_over(&self) -> Vec<Skipped> {
        let Some(flaw) = self.flaw else {
            return Vec::new();
        };
        let mut out = vec![Skipped {
            seen_at: self.seen_at,
            line: self.line,
            flaw,
        }];
        out.extend(self.torn_between.iter().rev().cloned());
        out
    }

    /// Whether `h` is the hash of this version or of the whole one before it.
    fn holds(&self, h: u64) -> bool {
        self.hash == h || self.whole_before.as_ref().is_some_and(|w| w.hash == h)
    }

    /// The bytes of the journal lines a compaction keeps of this life.
    fn kept_bytes(&self) -> usize {
        self.keep.iter().map(|(s, e)| e - s).sum()
    }
}

/// A journal read: its lives per task file, in journal order, and the lines it skipped.
#[derive(Debug, Default)]
pub struct Journal {
    pub path: PathBuf,
    pub list: String,
    pub folder: String,
    /// Every life of each file, oldest first.
    pub files: BTreeMap<String, Vec<Life>>,
    pub problems: Vec<Problem>,
    /// The time of the last `run` line.
    pub last_run: Option<u64>,
    /// The byte range of the header and of the last `run` line.
    header: (usize, usize),
    run_line: Option<(usize, usize)>,
    /// The length up to the end of the last complete line.
    complete: usize,
}

impl Journal {
    /// The bytes a compaction keeps: the header, the lines of every life that is alive or
    /// vanished and not restored, and the last `run` line.
    fn kept_bytes(&self) -> usize {
        let lines: usize = self.kept().map(Life::kept_bytes).sum();
        (self.header.1 - self.header.0) + lines + self.run_line.map_or(0, |(s, e)| e - s)
    }

    /// The current life of `file`, if any.
    pub fn current(&self, file: &str) -> Option<&Life> {
        self.files.get(file).and_then(|v| v.last())
    }

    /// The lives a compaction keeps: each alive, or vanished and neither restored nor back.
    fn kept(&self) -> impl Iterator<Item = &Life> {
        self.files.values().flat_map(|lives| {
            lives
                .iter()
                .enumerate()
                .filter(|(i, l)| {
                    l.restored_into.is_none()
                        && !matches!(l.end, Some((End::Deleted, _)))
                        && !came_back(lives, *i)
                })
                .map(|(_, l)| l)
        })
    }
}

/// Whether `lives[i]`, a life of one file that a hook run found gone, came back: a later
/// life of the file holds the same bytes (those of its last version, or of the whole version
/// a restore would write back). It is history then: [`crate::vanish`] does not call
/// it vanished, and a compaction drops it.
pub fn came_back(lives: &[Life], i: usize) -> bool {
    let life = &lives[i];
    let back = |h: u64| lives[i + 1..].iter().any(|l| l.holds(h));
    matches!(life.end, Some((End::Gone, _)))
        && (back(life.hash) || life.restorable().is_some_and(|r| back(r.hash)))
}

/// Reads `bytes` as the journal of `list`. With `full`, task bytes are decoded and checked
/// against their hash. `Err` when the file is not this list's journal at all.
pub fn parse(path: &Path, bytes: &[u8], list: &str, full: bool) -> Result<Journal, JournalError> {
    let mut j = Journal {
        path: path.to_path_buf(),
        list: list.to_string(),
        ..Journal::default()
    };
    let first_end =
        bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| JournalError::Foreign {
                path: path.to_path_buf(),
                why: if bytes.is_empty() {
                    "the file is empty".into()
                } else {
                    "it has no complete line".into()
                },
            })?;
    let header = read_header(path, &bytes[..first_end], list)?;
    j.folder = header.folder;
    j.header = (0, first_end + 1);
    j.complete = first_end + 1;
    let mut start = first_end + 1;
    let mut n = 1;
    let mut prefix = Vec::new();
    while start < bytes.len() {
        n += 1;
        let Some(len) = bytes[start..].iter().position(|&b| b == b'\n') else {
            j.problems.push(Problem {
                line: n,
                what: "a torn entry (the file ends in the middle of it), skipped".into(),
            });
            break;
        };
        let range = (start, start + len + 1);
        start = range.1;
        j.complete = range.1;
        let line = &bytes[range.0..range.0 + len];
        if line.is_empty() {
            continue;
        }
        let result = if full {
            apply::<Cow<str>>(&mut j, line, range, n, false)
        } else {
            match light_prefix(line) {
                // The bytes are most of the journal and the hook needs none of them: only
                // the fields before them are parsed, and whether they are empty is seen
                // from the line's end.
                Some(end) => {
                    prefix.clear();
                    prefix.extend_from_slice(&line[..end]);
                    prefix.push(b'}');
                    let empty = &line[end..] == br#","text":""}"#;
                    apply::<Unread>(&mut j, &prefix, range, n, empty)
                }
                None => apply::<serde::de::IgnoredAny>(&mut j, line, range, n, false),
            }
        };
        if let Err(what) = result {
            j.problems.push(Problem { line: n, what });
        }
    }
    if let Some(run) = j.last_run {
        for l in j.files.values_mut().filter_map(|v| v.last_mut()) {
            if l.is_alive() {
                l.last_at = l.last_at.max(run);
            }
        }
    }
    Ok(j)
}

/// The first line of the journal at `path`, which must be a taskproof journal's, of a format
/// this taskproof reads, and of the list `list`.
fn read_header(path: &Path, line: &[u8], list: &str) -> Result<Header, JournalError> {
    let foreign = |why: String| JournalError::Foreign {
        path: path.to_path_buf(),
        why,
    };
    let v: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| foreign(format!("not JSON: {e}")))?;
    let Some(found) = v
        .get("taskproof_journal")
        .and_then(serde_json::Value::as_u64)
    else {
        return Err(foreign("no taskproof_journal format number".into()));
    };
    if found > FORMAT {
        return Err(JournalError::Newer {
            path: path.to_path_buf(),
            found,
        });
    }
    let header: Header = serde_json::from_value(v).map_err(|e| foreign(e.to_string()))?;
    if header.list != list {
        return Err(JournalError::OtherList {
            path: path.to_path_buf(),
            theirs: header.list,
            folder: header.folder,
            ours: list.to_string(),
        });
    }
    Ok(header)
}

/// Where the task bytes of a whole entry line start (the `,` before `"text":"` or `"hex":"`),
/// when the line ends as an entry with them does. A `"` inside a JSON string is always
/// escaped, so the first such key outside the bytes is theirs. `None` for any other line,
/// which is then parsed whole.
fn light_prefix(line: &[u8]) -> Option<usize> {
    if !line.ends_with(b"\"}") {
        return None;
    }
    let find = |hay: &[u8], key: &[u8]| hay.windows(key.len()).position(|w| w == key);
    // The text key comes right after the short fields: found early, and the hex key is then
    // looked for only before it.
    match find(line, b",\"text\":\"") {
        Some(t) => Some(find(&line[..t], b",\"hex\":\"").unwrap_or(t)),
        None => find(line, b",\"hex\":\""),
    }
}

/// The task bytes of an entry read by [`light_prefix`]: there, not read.
#[derive(Deserialize)]
struct Unread;

impl Payload for Unread {
    fn bytes(_: Option<Self>, _: Option<Self>) -> Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
}

/// What a journal's task bytes decode as.
trait Payload {
    /// The task file's bytes, or why they cannot be had; `Ok(None)` when not decoded.
    fn bytes(text: Option<Self>, hex: Option<Self>) -> Result<Option<Vec<u8>>, String>
    where
        Self: Sized;
}

impl Payload for serde::de::IgnoredAny {
    fn bytes(text: Option<Self>, hex: Option<Self>) -> Result<Option<Vec<u8>>, String> {
        match (text, hex) {
            (None, None) => Err("a seen entry without text or hex".into()),
            _ => Ok(None),
        }
    }
}

impl Payload for Cow<'_, str> {
    fn bytes(text: Option<Self>, hex: Option<Self>) -> Result<Option<Vec<u8>>, String> {
        match (text, hex) {
            (Some(t), None) => Ok(Some(t.into_owned().into_bytes())),
            (None, Some(h)) => decode_hex(&h)
                .map(Some)
                .ok_or_else(|| "its hex is not hex".into()),
            _ => Err("a seen entry needs exactly one of text and hex".into()),
        }
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Folds one entry line into the journal's lives. `light_empty`: the line, read without its
/// task bytes, holds none (`"text":""`).
fn apply<'a, T: Deserialize<'a> + Payload>(
    j: &mut Journal,
    line: &'a [u8],
    range: (usize, usize),
    n: usize,
    light_empty: bool,
) -> Result<(), String> {
    let e: In<'a, T> =
        serde_json::from_slice(line).map_err(|e| format!("not a journal entry ({e}), skipped"))?;
    if e.op == "run" {
        // Each live task's `last_at` is set from the last run once the whole file is read:
        // a run line is written only after the run journaled every change it saw, so a task
        // still live after it was there, as journaled, at that time.
        j.last_run = Some(e.at);
        j.run_line = Some(range);
        return Ok(());
    }
    let file = e
        .file
        .as_deref()
        .filter(|f| !f.is_empty() && !f.contains('/') && !f.starts_with('.'))
        .ok_or_else(|| format!("a {} entry without a task file name, skipped", e.op))?
        .to_string();
    let lives = j.files.entry(file.clone()).or_default();
    match &*e.op {
        "seen" => {
            let h =
                e.hash.as_deref().and_then(parse_hash).ok_or_else(|| {
                    format!("the seen entry of {file} has no valid hash, skipped")
                })?;
            let mut damaged = None;
            let marked = e.torn.as_deref().map(Torn::parse);
            let (bytes, flaw) = match T::bytes(e.text, e.hex) {
                Ok(Some(b)) if hash(&file, &b) == h => {
                    // Read with the task bytes: an entry without a mark (written before the
                    // mark existed) is judged by its bytes.
                    let flaw = marked.or_else(|| Torn::of_bytes(&b)).map(Flaw::Torn);
                    (Some(b), flaw)
                }
                Ok(Some(_)) => {
                    damaged = Some(format!(
                        "the bytes of {file} do not match their hash (the entry is damaged); they are never restored"
                    ));
                    (None, Some(Flaw::Damaged))
                }
                // Not read (the hook): the mark, else what the line shows without decoding.
                Ok(None) => (
                    None,
                    marked
                        .or(light_empty.then_some(Torn::Empty))
                        .map(Flaw::Torn),
                ),
                Err(why) => return Err(format!("{file}: {why}, skipped")),
            };
            let life = Life {
                file: file.clone(),
                seen_at: e.at,
                last_at: e.at,
                hash: h,
                bytes,
                line: n,
                end: None,
                restored_into: None,
                flaw,
                whole_before: None,
                torn_between: Vec::new(),
                keep: vec![range],
            };
            match lives.last_mut() {
                // A new version of a live task replaces the one before it; when the new one
                // is not whole, the latest whole one before it is kept beside it, for
                // `--restore`, and so are the lines a compaction needs to find it again.
                Some(cur) if cur.is_alive() => {
                    let cur = std::mem::replace(cur, life);
                    let new = lives.last_mut().expect("just replaced");
                    if !new.is_whole() {
                        let (before, mut between) = match cur.flaw {
                            None => (Some(Box::new(cur)), Vec::new()),
                            Some(flaw) => {
                                let mut between = cur.torn_between;
                                between.push(Skipped {
                                    seen_at: cur.seen_at,
                                    line: cur.line,
                                    flaw,
                                });
                                (cur.whole_before, between)
                            }
                        };
                        std::mem::swap(&mut new.torn_between, &mut between);
                        if let Some(b) = before {
                            new.keep.insert(0, b.keep[0]);
                            new.whole_before = Some(b);
                        }
                    }
                }
                _ => lives.push(life),
            }
            if let Some(what) = damaged {
                return Err(what);
            }
        }
        "delete" | "gone" => {
            if let Some(cur) = lives.last_mut().filter(|l| l.is_alive()) {
                if e.op == "delete" {
                    cur.end = Some((End::Deleted, e.at));
                } else {
                    cur.end = Some((End::Gone, e.at));
                    cur.last_at = cur.last_at.max(e.last_seen.unwrap_or(0));
                    cur.keep.push(range);
                }
            }
        }
        "restored" => {
            let h = e.hash.as_deref().and_then(parse_hash);
            let into = e.into.as_deref().unwrap_or("").to_string();
            // The latest version with that hash that was not deleted.
            if let Some(l) = lives.iter_mut().rev().find(|l| {
                h.is_some_and(|h| l.holds(h)) && !matches!(l.end, Some((End::Deleted, _)))
            }) {
                if l.end.is_none() {
                    l.end = Some((End::Gone, e.at));
                }
                l.restored_into = Some(into);
            }
        }
        other => return Err(format!("an entry of unknown kind {other:?}, skipped")),
    }
    Ok(())
}

/// A journal file held open under its flock; the flock goes with it when it is dropped.
#[derive(Debug)]
pub struct Locked {
    file: File,
    path: PathBuf,
}

/// Takes the exclusive flock of the journal at `path` (creating the file and its folder when
/// absent) for a hook run, which reads the list only then and hands the lock to [`record`] or
/// [`record_written`]: two runs on one list (a team's, shared by several Claude Code
/// processes) then journal what they read in the order they read it, and no run appends a
/// version older than one another run appended after reading the list later.
pub fn lock(path: &Path) -> Result<Locked, JournalError> {
    open_locked(path, true, true)?.ok_or_else(|| JournalError::Missing {
        path: path.to_path_buf(),
    })
}

/// Opens the journal at `path` and takes its flock (`exclusive` to write), creating the file
/// (and its folder) when `create`. Retries when a compaction replaced the file between the
/// open and the lock, so the lock is always on the file the path names.
fn open_locked(path: &Path, exclusive: bool, create: bool) -> Result<Option<Locked>, JournalError> {
    let io = |error| JournalError::Io {
        path: path.to_path_buf(),
        error,
    };
    if create && let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|error| JournalError::Write {
            path: path.to_path_buf(),
            error,
        })?;
    }
    loop {
        let mut options = std::fs::OpenOptions::new();
        options
            .read(true)
            .write(exclusive)
            .create(create)
            .custom_flags(libc_nofollow())
            .mode(0o600);
        let file = match options.open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                return Err(JournalError::Symlink {
                    path: path.to_path_buf(),
                });
            }
            Err(e) => return Err(io(e)),
        };
        let op = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        rustix::fs::flock(file.as_fd(), op).map_err(|e| io(e.into()))?;
        let held = file.metadata().map_err(io)?;
        match std::fs::symlink_metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                return Ok(Some(Locked {
                    file,
                    path: path.to_path_buf(),
                }));
            }
            // Replaced or removed since the open: lock the file the path names now.
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        }
    }
}

/// `O_NOFOLLOW`, for `OpenOptionsExt::custom_flags` (std sets `O_CLOEXEC` itself).
fn libc_nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

impl Locked {
    fn io(&self, error: io::Error) -> JournalError {
        JournalError::Io {
            path: self.path.clone(),
            error,
        }
    }

    fn read_all(&mut self) -> Result<Vec<u8>, JournalError> {
        let mut bytes = Vec::new();
        self.file.rewind().map_err(|e| self.io(e))?;
        self.file.read_to_end(&mut bytes).map_err(|e| self.io(e))?;
        Ok(bytes)
    }

    /// Where the next lines go, without reading the journal beyond its first line (which
    /// must be `list`'s) and the end of its last complete line.
    fn append_point(&self, list: &str) -> Result<AppendPoint, JournalError> {
        let size = self.file.metadata().map_err(|e| self.io(e))?.len();
        if size == 0 {
            return Ok(AppendPoint { size, complete: 0 });
        }
        let Some(first) = first_line(&self.file, size).map_err(|e| self.io(e))? else {
            return Err(JournalError::Foreign {
                path: self.path.clone(),
                why: "it has no complete line".into(),
            });
        };
        read_header(&self.path, &first, list)?;
        let complete =
            taskproof_store::audit::complete_len(&self.file, size).map_err(|e| self.io(e))?;
        Ok(AppendPoint { size, complete })
    }

    /// Writes `lines` at `at` (the end of the last complete line of a file of `old_len`
    /// bytes), cutting what followed; refused past [`HARD_LIMIT`].
    fn write_at(&self, at: u64, old_len: u64, lines: &[u8]) -> Result<(), JournalError> {
        within_limit(&self.path, at, lines.len())?;
        let w = |error| JournalError::Write {
            path: self.path.clone(),
            error,
        };
        self.file.write_all_at(lines, at).map_err(w)?;
        let end = at + lines.len() as u64;
        if old_len > end {
            self.file.set_len(end).map_err(w)?;
        }
        Ok(())
    }
}

/// Where lines are appended to a journal: after its last complete line.
struct AppendPoint {
    /// The file's length.
    size: u64,
    /// Its length up to the end of its last complete line; 0 when the file is new.
    complete: u64,
}

impl AppendPoint {
    /// The lines to write start with the journal's first line when the file is new.
    fn start(&self, list: &str, folder: &Path, at: u64) -> Vec<u8> {
        if self.size == 0 {
            header_line(list, folder, at)
        } else {
            Vec::new()
        }
    }
}

/// Locks the journal at `path` (creating it when absent) to append lines to it.
fn open_for_append(path: &Path, list: &str) -> Result<(Locked, AppendPoint), JournalError> {
    let locked = lock(path)?;
    let point = locked.append_point(list)?;
    Ok((locked, point))
}

/// Reads the journal at `path` as the journal of `list`, with its task bytes, under a shared
/// flock so no append is seen half-done. `Ok(None)` when there is no journal there.
pub fn read(path: &Path, list: &str) -> Result<Option<Journal>, JournalError> {
    let Some(mut locked) = open_locked(path, false, false)? else {
        return Ok(None);
    };
    let bytes = locked.read_all()?;
    if bytes.is_empty() {
        // Created and not yet written to: a journal with nothing in it.
        return Ok(Some(Journal {
            path: path.to_path_buf(),
            list: list.to_string(),
            ..Journal::default()
        }));
    }
    parse(path, &bytes, list, true).map(Some)
}

/// What one hook run tells the journal.
#[derive(Debug, Clone, Default)]
pub struct Observed<'a> {
    /// Every readable task file of the list, with its bytes.
    pub files: &'a [(String, Vec<u8>)],
    /// Task files present but not readable (a link, a folder): neither seen nor gone.
    pub unreadable: &'a [String],
    /// Files the agent asked to delete in this call (`TaskUpdate` status `deleted`), or that
    /// Claude Code takes back because the hook refused them (`TaskCreated`).
    pub deleting: Vec<String>,
    /// The files of `files` whose bytes were not a whole task when read, and why.
    pub torn: &'a [(String, Torn)],
}

/// The mark of `name` in a run's `torn` list.
fn torn_of(torn: &[(String, Torn)], name: &str) -> Option<Torn> {
    torn.iter().find(|(n, _)| n == name).map(|(_, t)| *t)
}

/// Brings the journal of list `list` (folder `folder`), held by `locked` since before the
/// list was read, up to date with what a hook run saw: a `seen` entry for each file whose
/// bytes the journal has not seen as its current version (or had as a version that was not
/// whole, and are whole now), marked when they are not whole, `gone` for each live file that is
/// missing, `delete` for each delete asked for, then one `run` line; compacts when due.
/// Returns how many entries it wrote.
pub fn record(
    mut locked: Locked,
    list: &str,
    folder: &Path,
    seen: &Observed<'_>,
    at: u64,
) -> Result<usize, JournalError> {
    let bytes = locked.read_all()?;
    let mut out = Vec::new();
    let journal = if bytes.is_empty() {
        out = header_line(list, folder, at);
        Journal::default()
    } else {
        parse(&locked.path, &bytes, list, false)?
    };

    let mut written = 0;
    let present: std::collections::BTreeSet<&str> = seen
        .files
        .iter()
        .map(|(n, _)| n.as_str())
        .chain(seen.unreadable.iter().map(String::as_str))
        .collect();
    for (name, content) in seen.files {
        let h = hash(name, content);
        let torn = torn_of(seen.torn, name);
        // The same bytes read whole again, after a read that caught them mid-rewrite, are
        // journaled again: that version is whole after all.
        let known = journal
            .current(name)
            .is_some_and(|l| l.is_alive() && l.hash == h && (l.is_whole() || torn.is_some()));
        if !known {
            out.extend(seen_line(at, name, content, torn));
            written += 1;
        }
    }
    for (name, lives) in &journal.files {
        if let Some(l) = lives.last().filter(|l| l.is_alive())
            && !present.contains(name.as_str())
            && !seen.deleting.contains(name)
        {
            let mut gone = Out::new(at, "gone", Some(name));
            gone.last_seen = Some(l.last_at);
            out.extend(gone.line());
            written += 1;
        }
    }
    // Before the delete (`PreToolUse`) the file is there; after it (`PostToolUse`) it is
    // gone, and was this run's to delete, not something that vanished.
    for name in &seen.deleting {
        let alive = journal.current(name).is_some_and(Life::is_alive);
        if present.contains(name.as_str()) || alive {
            out.extend(Out::new(at, "delete", Some(name)).line());
            written += 1;
        }
    }
    out.extend(Out::new(at, "run", None).line());

    let old_len = bytes.len() as u64;
    locked.write_at(journal.complete as u64, old_len, &out)?;
    let len = (journal.complete + out.len()) as u64;
    // What a compaction would keep is at most what it keeps now plus this run's lines: unless
    // that much is less than half the file (or over the bound), the file is not parsed a
    // second time to find out.
    let upper = (journal.kept_bytes() + out.len()) as u64;
    if len > COMPACT_FROM && (upper * 2 < len || upper > MAX_BYTES) {
        // Judged on the journal as it is now, with this run's lines in it.
        let mut all = bytes;
        all.truncate(journal.complete);
        all.extend_from_slice(&out);
        compact_if_due(&locked, list, all)?;
    }
    Ok(written)
}

/// Compacts the journal whose whole content is `all` when more than half of it is history,
/// or it is over [`MAX_BYTES`].
fn compact_if_due(locked: &Locked, list: &str, all: Vec<u8>) -> Result<(), JournalError> {
    let now = parse(&locked.path, &all, list, false)?;
    let kept = now.kept_bytes() as u64;
    if kept * 2 < all.len() as u64 || kept > MAX_BYTES {
        compact(locked, &all, &now)?;
    }
    Ok(())
}

/// Where a `PostToolUse` run checks whether the journal is due for compaction: each time its
/// appends take the file past a multiple of this, since reading the whole file each time
/// would cost what the run saves by not reading it.
const POST_CHECK_EVERY: u64 = 256 * 1024;

/// The `PostToolUse` run's journal entries: a `seen` entry of each file the tool call wrote
/// (`files`, read just now, with the journal `locked` since before; those in `torn` marked),
/// without reading the journal beyond its first line (which must be this list's) and its
/// end. An entry of a file whose bytes the journal already had is history, dropped by the
/// next compaction.
pub fn record_written(
    mut locked: Locked,
    list: &str,
    folder: &Path,
    files: &[(String, Vec<u8>)],
    torn: &[(String, Torn)],
    at: u64,
) -> Result<usize, JournalError> {
    let point = locked.append_point(list)?;
    let mut out = point.start(list, folder, at);
    for (name, content) in files {
        out.extend(seen_line(at, name, content, torn_of(torn, name)));
    }
    locked.write_at(point.complete, point.size, &out)?;
    let len = point.complete + out.len() as u64;
    if len > COMPACT_FROM && len / POST_CHECK_EVERY != point.size / POST_CHECK_EVERY {
        let all = locked.read_all()?;
        compact_if_due(&locked, list, all)?;
    }
    Ok(files.len())
}

/// The longest first line looked for: a journal's is about 150 bytes and its list folder.
const MAX_FIRST_LINE: usize = 64 * 1024;

/// The first line of a file of `size` bytes, without its newline; `None` when it has none
/// within [`MAX_FIRST_LINE`]. Reads 512 bytes first, then four times more each time.
fn first_line(file: &File, size: u64) -> io::Result<Option<Vec<u8>>> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let mut buf = Vec::new();
    let mut want = 512;
    loop {
        let have = buf.len();
        let upto = want.min(size).min(MAX_FIRST_LINE);
        buf.resize(upto, 0);
        file.read_exact_at(&mut buf[have..], have as u64)?;
        if let Some(i) = buf[have..].iter().position(|&b| b == b'\n') {
            buf.truncate(have + i);
            return Ok(Some(buf));
        }
        if upto == size || upto == MAX_FIRST_LINE {
            return Ok(None);
        }
        want *= 4;
    }
}

/// Appends a `restored` entry for each version `check --restore` wrote back `into` (a list
/// folder) to the journal at `path`; with `same_list`, also a `seen` entry of each, since the
/// version is live in this list again.
pub fn record_restore(
    path: &Path,
    list: &str,
    folder: &Path,
    restored: &[(String, Vec<u8>)],
    into: &str,
    same_list: bool,
    at: u64,
) -> Result<(), JournalError> {
    append(path, list, folder, at, |out| {
        for (name, content) in restored {
            let mut r = Out::new(at, "restored", Some(name));
            r.hash = Some(hash_text(hash(name, content)));
            r.into = Some(into);
            out.extend(r.line());
            if same_list {
                out.extend(seen_line(at, name, content, None));
            }
        }
    })
}

/// Appends a `seen` entry for each file to the journal at `path` (created when absent): the
/// first entries of a list `check --restore` made, so that a reset of it is found again.
pub fn record_seen(
    path: &Path,
    list: &str,
    folder: &Path,
    files: &[(String, Vec<u8>)],
    at: u64,
) -> Result<(), JournalError> {
    append(path, list, folder, at, |out| {
        for (name, content) in files {
            out.extend(seen_line(at, name, content, None));
        }
    })
}

/// Appends the lines `fill` writes to the journal at `path` under its flock, after its last
/// complete line, starting the journal (its first line) when the file is new.
fn append(
    path: &Path,
    list: &str,
    folder: &Path,
    at: u64,
    fill: impl FnOnce(&mut Vec<u8>),
) -> Result<(), JournalError> {
    let (locked, point) = open_for_append(path, list)?;
    let mut out = point.start(list, folder, at);
    fill(&mut out);
    locked.write_at(point.complete, point.size, &out)
}

fn header_line(list: &str, folder: &Path, at: u64) -> Vec<u8> {
    let header = Header {
        taskproof_journal: FORMAT,
        list: list.to_string(),
        folder: folder.display().to_string(),
        created: at,
    };
    let mut out = serde_json::to_vec(&header).expect("headers serialize");
    out.push(b'\n');
    out
}

/// Rewrites the journal whole with only what `check` and `--restore` need (see the module
/// docs), through the store's whole-file write ([`Dir::write_atomic_through`]): a temporary
/// file in its folder, fsynced and renamed over it, then the folder fsynced. The temporary
/// file has one fixed name per journal, `.{name}.compact`, which the flock makes this
/// writer's alone: one that a killed compaction left is written over by the next. The caller
/// holds the flock; a writer waiting for it finds the new file when it gets it.
fn compact(locked: &Locked, bytes: &[u8], j: &Journal) -> Result<(), JournalError> {
    let w = |error| JournalError::Write {
        path: locked.path.clone(),
        error,
    };
    let mut lives: Vec<&Life> = j.kept().collect();
    let mut size: usize = lives.iter().map(|l| l.kept_bytes()).sum();
    if size as u64 > MAX_BYTES {
        // Over the bound: the oldest vanished versions go first; live ones are what the list
        // is, and a journal without them is no journal.
        lives.sort_by_key(|l| (l.is_alive(), l.seen_at));
        let mut dropped = 0;
        while size as u64 > MAX_BYTES && lives.get(dropped).is_some_and(|l| !l.is_alive()) {
            size -= lives[dropped].kept_bytes();
            dropped += 1;
        }
        lives.drain(..dropped);
        if size as u64 > MAX_BYTES {
            return Err(JournalError::TooLarge {
                path: locked.path.clone(),
                bytes: size as u64,
            });
        }
    }
    lives.sort_by_key(|l| l.line);
    let mut out = bytes[j.header.0..j.header.1].to_vec();
    for l in &lives {
        for (s, e) in &l.keep {
            out.extend_from_slice(&bytes[*s..*e]);
        }
    }
    if let Some((s, e)) = j.run_line {
        out.extend_from_slice(&bytes[s..e]);
    }
    let (Some(dir), Some(name)) = (
        locked.path.parent(),
        locked.path.file_name().and_then(|n| n.to_str()),
    ) else {
        return Err(w(io::Error::other("not a file in a folder")));
    };
    let dir = Dir::open_root(dir).map_err(w)?;
    dir.write_atomic_through(name, &format!(".{name}.compact"), 0o600, &out, true)
        .map_err(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(JOURNAL_DIR).join("l.jsonl");
        (tmp, path)
    }

    fn try_run(
        path: &Path,
        present: &[(&str, &[u8])],
        deleting: &[&str],
        at: u64,
    ) -> Result<usize, JournalError> {
        let files: Vec<(String, Vec<u8>)> = present
            .iter()
            .map(|(n, b)| (n.to_string(), b.to_vec()))
            .collect();
        let seen = Observed {
            files: &files,
            unreadable: &[],
            deleting: deleting.iter().map(|d| d.to_string()).collect(),
            torn: &[],
        };
        record(lock(path)?, "l", Path::new("/t/l"), &seen, at)
    }

    /// Records one hook run that read `present` and was asked to delete `deleting`.
    fn run(path: &Path, present: &[(&str, &[u8])], deleting: &[&str], at: u64) -> usize {
        try_run(path, present, deleting, at).unwrap()
    }

    /// Records one hook run that read `present`, those in `torn` not whole.
    fn run_marked(path: &Path, present: &[(&str, &[u8])], torn: &[(&str, Torn)], at: u64) -> usize {
        let files: Vec<(String, Vec<u8>)> = present
            .iter()
            .map(|(n, b)| (n.to_string(), b.to_vec()))
            .collect();
        let torn: Vec<(String, Torn)> = torn.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        let seen = Observed {
            files: &files,
            torn: &torn,
            ..Observed::default()
        };
        record(lock(path).unwrap(), "l", Path::new("/t/l"), &seen, at).unwrap()
    }

    const WHOLE: &[u8] =
        br#"{"id":"1","subject":"a","status":"pending","blocks":[],"blockedBy":[]}"#;

    #[test]
    fn what_a_read_marks() {
        // The size when opened differs from what was read: a writer was at work.
        assert_eq!(Torn::of_read(WHOLE, 3, true), Some(Torn::Changing));
        assert_eq!(Torn::of_read(b"", 70, false), Some(Torn::Changing));
        assert_eq!(Torn::of_read(b"", 0, false), Some(Torn::Empty));
        assert_eq!(Torn::of_read(&WHOLE[..9], 9, false), Some(Torn::Malformed));
        assert_eq!(Torn::of_read(WHOLE, WHOLE.len() as i64, true), None);
        // Without a mark, the bytes alone.
        assert_eq!(Torn::of_bytes(b""), Some(Torn::Empty));
        assert_eq!(Torn::of_bytes(&WHOLE[..9]), Some(Torn::Malformed));
        assert_eq!(Torn::of_bytes(b"[1]"), Some(Torn::Malformed));
        assert_eq!(Torn::of_bytes(WHOLE), None);
        for t in [Torn::Changing, Torn::Empty, Torn::Malformed] {
            assert_eq!(Torn::parse(t.as_str()), t);
        }
        assert_eq!(Torn::parse("sideways"), Torn::Other);
    }

    #[test]
    fn a_version_that_is_not_whole_is_marked_and_the_whole_one_before_it_kept() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", WHOLE)], &[], 10);
        // Read while being rewritten in place: empty, then half written.
        run_marked(&path, &[("1.json", b"")], &[("1.json", Torn::Empty)], 20);
        let half = &WHOLE[..20];
        run_marked(
            &path,
            &[("1.json", half)],
            &[("1.json", Torn::Changing)],
            30,
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""torn":"empty","text":"""#), "{text}");
        assert!(text.contains(r#""torn":"changing","text":"#), "{text}");
        let j = journal(&path);
        assert!(j.problems.is_empty(), "{:?}", j.problems);
        let cur = j.current("1.json").unwrap();
        assert_eq!(cur.bytes.as_deref(), Some(half));
        assert_eq!(cur.flaw, Some(Flaw::Torn(Torn::Changing)));
        let r = cur.restorable().unwrap();
        assert_eq!((r.seen_at, r.bytes.as_deref()), (10, Some(WHOLE)));
        let passed: Vec<(u64, Flaw)> = cur
            .passed_over()
            .iter()
            .map(|s| (s.seen_at, s.flaw))
            .collect();
        assert_eq!(
            passed,
            [
                (30, Flaw::Torn(Torn::Changing)),
                (20, Flaw::Torn(Torn::Empty))
            ]
        );
        // The hook, reading without the bytes, knows the same from the marks.
        let light = parse(&path, &std::fs::read(&path).unwrap(), "l", false).unwrap();
        let cur = light.current("1.json").unwrap();
        assert_eq!(cur.flaw, Some(Flaw::Torn(Torn::Changing)));
        assert_eq!(cur.restorable().unwrap().seen_at, 10);
        // Torn the same way again: nothing new. The same bytes read whole after all: they
        // are journaled again, as a whole version.
        let marked = [("1.json", Torn::Changing)];
        assert_eq!(run_marked(&path, &[("1.json", half)], &marked, 35), 0);
        let rest = br#"{"id":"1","subject":"a"#;
        assert_eq!(run(&path, &[("1.json", rest)], &[], 40), 1);
        let cur = journal(&path).current("1.json").unwrap().clone();
        assert_eq!(
            cur.flaw,
            Some(Flaw::Torn(Torn::Malformed)),
            "judged by its bytes"
        );
        assert_eq!(run(&path, &[("1.json", WHOLE)], &[], 50), 1);
        assert_eq!(run(&path, &[("1.json", WHOLE)], &[], 60), 0);
        let cur = journal(&path).current("1.json").unwrap().clone();
        assert!(cur.is_whole() && cur.whole_before.is_none());
        assert_eq!(cur.restorable().unwrap().seen_at, 50);
        assert!(cur.passed_over().is_empty());
    }

    #[test]
    fn entries_written_before_the_mark_are_judged_by_their_bytes() {
        let (_tmp, path) = setup();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // What an earlier build wrote when a run read 1.json empty, then half written: no
        // mark on either.
        let mut text = header_line("l", Path::new("/t/l"), 1);
        text.extend(seen_line(10, "1.json", WHOLE, None));
        text.extend(seen_line(20, "1.json", b"", None));
        text.extend(Out::new(20, "run", None).line());
        std::fs::write(&path, &text).unwrap();
        let light = parse(&path, &text, "l", false).unwrap();
        let cur = light.current("1.json").unwrap();
        assert_eq!(
            cur.flaw,
            Some(Flaw::Torn(Torn::Empty)),
            "seen from the line"
        );
        assert_eq!(cur.restorable().unwrap().seen_at, 10);
        text.extend(seen_line(30, "1.json", &WHOLE[..20], None));
        std::fs::write(&path, &text).unwrap();
        let j = journal(&path);
        let cur = j.current("1.json").unwrap();
        assert_eq!(cur.flaw, Some(Flaw::Torn(Torn::Malformed)));
        let r = cur.restorable().unwrap();
        assert_eq!((r.seen_at, r.bytes.as_deref()), (10, Some(WHOLE)));
        assert_eq!(cur.passed_over().len(), 2);
        // A damaged entry is not whole either.
        let mut damaged = header_line("l", Path::new("/t/l"), 1);
        damaged.extend(seen_line(10, "1.json", WHOLE, None));
        let bad = String::from_utf8(seen_line(20, "1.json", WHOLE, None))
            .unwrap()
            .replace(r#"\"a\""#, r#"\"b\""#);
        damaged.extend(bad.as_bytes());
        std::fs::write(&path, &damaged).unwrap();
        let j = journal(&path);
        let cur = j.current("1.json").unwrap();
        assert_eq!(cur.flaw, Some(Flaw::Damaged));
        assert_eq!(cur.restorable().unwrap().seen_at, 10);
    }

    #[test]
    fn a_compaction_keeps_the_whole_version_behind_one_that_is_not() {
        for marked in [true, false] {
            let (_tmp, path) = setup();
            run(&path, &[("1.json", WHOLE)], &[], 1);
            if marked {
                run_marked(&path, &[("1.json", b"")], &[("1.json", Torn::Empty)], 2);
            } else {
                // As an earlier build journaled it.
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                f.write_all(&seen_line(2, "1.json", b"", None)).unwrap();
            }
            grow_past_compaction(&path, &[("1.json", b"")], 3);
            assert!(std::fs::metadata(&path).unwrap().len() < COMPACT_FROM);
            let j = journal(&path);
            assert!(j.problems.is_empty(), "{:?}", j.problems);
            let cur = j.current("1.json").unwrap();
            assert_eq!(cur.flaw, Some(Flaw::Torn(Torn::Empty)), "marked: {marked}");
            let r = cur.restorable().expect("the whole version survives");
            assert_eq!((r.seen_at, r.bytes.as_deref()), (1, Some(WHOLE)));
        }
    }

    fn journal(path: &Path) -> Journal {
        read(path, "l").unwrap().unwrap()
    }

    #[test]
    fn the_hash_covers_the_name_and_the_bytes() {
        assert_ne!(hash("1.json", b"x"), hash("2.json", b"x"));
        assert_ne!(hash("1.json", b"x"), hash("1.json", b"y"));
        // Padding cannot pass for content, nor content move between name and bytes.
        assert_ne!(hash("1.json", b"ab"), hash("1.json", b"ab\0"));
        assert_ne!(hash("1.json", b"x"), hash("1.jsonx", b""));
        // Pinned: journals written by earlier builds must keep matching.
        assert_eq!(hash("1.json", b"{}"), 0xf6be_7bce_f767_4d97);
        assert_eq!(parse_hash(&hash_text(42)), Some(42));
        assert_eq!(parse_hash("42"), None);
    }

    #[test]
    fn the_hook_reads_only_the_fields_before_the_bytes() {
        let line = seen_line(7, "1.json", b"{\"text\":\"x\"}", Some(Torn::Malformed));
        let line = &line[..line.len() - 1];
        let end = light_prefix(line).unwrap();
        assert!(
            line[end..].starts_with(b",\"text\":\""),
            "{}",
            String::from_utf8_lossy(line)
        );
        // A quote inside a string is escaped, so a path holding the key is not taken for it.
        let mut r = Out::new(1, "restored", Some("1.json"));
        r.into = Some(r#"/t/,"text":"x"#);
        let line = r.line();
        assert_eq!(light_prefix(&line[..line.len() - 1]), None);
        // A line cut inside its bytes is parsed whole, and refused.
        assert_eq!(
            light_prefix(br#"{"at":1,"op":"seen","file":"1.json","hash":"00","text":"ab"#),
            None
        );
    }

    #[test]
    fn a_run_journals_only_what_changed_and_what_went() {
        let (_tmp, path) = setup();
        let both: &[(&str, &[u8])] = &[("1.json", b"{\"id\":\"1\"}"), ("2.json", b"two")];
        assert_eq!(run(&path, both, &[], 10), 2);
        assert_eq!(run(&path, both, &[], 20), 0);
        // 1 changes, 2 goes without a delete.
        assert_eq!(
            run(&path, &[("1.json", b"{\"id\":\"1\",\"x\":1}")], &[], 30),
            2
        );
        let j = journal(&path);
        assert!(j.problems.is_empty(), "{:?}", j.problems);
        let one = j.current("1.json").unwrap();
        assert_eq!(one.bytes.as_deref(), Some(&b"{\"id\":\"1\",\"x\":1}"[..]));
        assert!(one.is_alive());
        let two = j.current("2.json").unwrap();
        assert_eq!(two.end, Some((End::Gone, 30)));
        assert_eq!(two.last_at, 20, "the last run that saw it");
        assert_eq!(two.bytes.as_deref(), Some(&b"two"[..]));
        assert_eq!(j.last_run, Some(30));
    }

    #[test]
    fn a_delete_asked_for_ends_the_task_as_deleted_not_gone() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"a")], &["1.json"], 10);
        run(&path, &[], &[], 20);
        assert_eq!(
            journal(&path).current("1.json").unwrap().end,
            Some((End::Deleted, 10))
        );
        // A delete that did not happen: the file is still there, and it is live again.
        run(&path, &[("2.json", b"b")], &["2.json"], 30);
        run(&path, &[("2.json", b"b")], &[], 40);
        assert!(journal(&path).current("2.json").unwrap().is_alive());
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_cut_by_the_next_append() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"a")], &[], 10);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(br#"{"at":11,"op":"seen","file":"2.json","hash":"00"#)
            .unwrap();
        drop(f);
        let j = journal(&path);
        assert_eq!(j.problems.len(), 1);
        assert_eq!(j.problems[0].line, 4, "{:?}", j.problems);
        assert!(j.problems[0].what.contains("torn"), "{:?}", j.problems);
        assert!(
            j.current("2.json").is_none(),
            "a torn entry is never a task"
        );
        run(&path, &[("1.json", b"a")], &[], 20);
        assert!(journal(&path).problems.is_empty());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n{\"at\":20,\"op\":\"run\"}\n"), "{text}");
    }

    #[test]
    fn damaged_bytes_are_never_taken_for_the_task() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"abc")], &[], 10);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"text\":\"abc\"", "\"text\":\"abd\"")).unwrap();
        let j = journal(&path);
        assert_eq!(j.problems.len(), 1);
        assert_eq!(j.problems[0].line, 2);
        assert!(
            j.problems[0].what.contains("do not match their hash"),
            "{:?}",
            j.problems
        );
        // The task is still known (so it is not called new), but without bytes to restore.
        assert!(j.current("1.json").unwrap().bytes.is_none());
    }

    #[test]
    fn a_line_that_is_not_an_entry_is_skipped_with_its_number() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"a")], &[], 10);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("garbage\n{\"at\":1,\"op\":\"seen\",\"file\":\"../x\",\"hash\":\"0000000000000000\",\"text\":\"\"}\n{\"at\":1,\"op\":\"fly\",\"file\":\"1.json\"}\n");
        std::fs::write(&path, text).unwrap();
        let j = journal(&path);
        let lines: Vec<usize> = j.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [4, 5, 6], "{:?}", j.problems);
        assert!(j.problems[0].what.contains("not a journal entry"));
        assert!(j.problems[1].what.contains("without a task file name"));
        assert!(j.problems[2].what.contains("unknown kind \"fly\""));
        assert!(j.current("1.json").unwrap().is_alive());
    }

    #[test]
    fn bytes_that_are_not_utf8_round_trip_as_hex() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", &[0xff, 0x00, b'a'])], &[], 10);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"hex\":\"ff0061\"")
        );
        assert_eq!(
            journal(&path).current("1.json").unwrap().bytes.as_deref(),
            Some(&[0xff, 0x00, b'a'][..])
        );
    }

    #[test]
    fn a_foreign_or_other_lists_journal_is_refused_and_left_alone() {
        let (_tmp, path) = setup();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for (content, want) in [
            (
                "hello\n",
                "line 1 is not a taskproof journal's first line (not JSON",
            ),
            ("{\"a\":1}\n", "no taskproof_journal format number"),
            (
                "{\"taskproof_journal\":9,\"list\":\"l\",\"folder\":\"/\",\"created\":0}\n",
                "format 9, newer",
            ),
            (
                "{\"taskproof_journal\":1,\"list\":\"m\",\"folder\":\"/t/m\",\"created\":0}\n",
                "the journal of list \"m\" (/t/m), not of \"l\"",
            ),
            ("{\"taskproof_journal\":1", "it has no complete line"),
        ] {
            std::fs::write(&path, content).unwrap();
            let e = try_run(&path, &[("1.json", b"a")], &[], 10)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
            assert!(e.contains(&path.display().to_string()), "{e}");
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                content,
                "left alone"
            );
            let e = read(&path, "l").unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn a_journal_that_is_a_link_is_never_followed() {
        let (tmp, path) = setup();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let target = tmp.path().join("elsewhere");
        std::fs::write(&target, "x").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let e = try_run(&path, &[], &[], 10).unwrap_err();
        assert!(matches!(e, JournalError::Symlink { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
    }

    #[test]
    fn compaction_keeps_live_and_vanished_tasks_and_drops_history() {
        let (_tmp, path) = setup();
        // Task 2 deleted by the agent, task 3 vanished, then many versions of task 1.
        run(&path, &[("2.json", b"two"), ("3.json", b"three")], &[], 1);
        run(&path, &[("2.json", b"two")], &["2.json"], 2);
        // Twenty versions of 64 KiB: the run that takes the file past 1 MiB compacts it, and
        // the few after it grow it again from there.
        let big = "x".repeat(64 * 1024);
        let mut v = String::new();
        let mut largest = 0;
        for at in 3..23 {
            v = format!("{big}{at}");
            run(&path, &[("1.json", v.as_bytes())], &[], at);
            largest = largest.max(std::fs::metadata(&path).unwrap().len());
        }
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(largest <= COMPACT_FROM, "{largest}");
        assert!(
            len < COMPACT_FROM / 2,
            "compacted, then grown to {len} bytes"
        );
        let j = journal(&path);
        assert!(j.problems.is_empty(), "{:?}", j.problems);
        assert_eq!(
            j.current("1.json").unwrap().bytes.as_deref(),
            Some(v.as_bytes())
        );
        assert!(j.current("2.json").is_none(), "the deleted task is dropped");
        let three = j.current("3.json").unwrap();
        assert_eq!(three.end.map(|e| e.0), Some(End::Gone));
        assert_eq!(three.bytes.as_deref(), Some(&b"three"[..]));
        assert_eq!(three.last_at, 1);
        assert_eq!(j.last_run, Some(22));
    }

    #[test]
    fn nothing_is_appended_past_the_hard_limit() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"a")], &[], 1);
        // A journal whose complete lines reach the limit exactly: its header, then a line
        // that is no entry (a hole of zero bytes, so the file takes no room) and a newline.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(HARD_LIMIT).unwrap();
        f.write_all_at(b"\n", HARD_LIMIT - 1).unwrap();
        drop(f);
        let before = std::fs::read(&path).unwrap();
        let a = [("2.json".to_string(), b"b".to_vec())];
        let errors = [
            try_run(&path, &[("2.json", b"b")], &[], 2).unwrap_err(),
            record_written(lock(&path).unwrap(), "l", Path::new("/t/l"), &a, &[], 3).unwrap_err(),
            record_seen(&path, "l", Path::new("/t/l"), &a, 4).unwrap_err(),
            record_restore(&path, "l", Path::new("/t/l"), &a, "/t/m", false, 5).unwrap_err(),
        ];
        for e in errors {
            assert!(matches!(e, JournalError::TooLarge { .. }), "{e}");
            let e = e.to_string();
            assert!(e.contains(&path.display().to_string()), "{e}");
            assert!(e.contains("nothing more is journaled"), "{e}");
        }
        assert!(
            std::fs::read(&path).unwrap() == before,
            "the file is unchanged"
        );
    }

    /// Runs that see `also` and twenty versions of 64 KiB of 2.json: the run that takes the
    /// journal past 1 MiB compacts it.
    fn grow_past_compaction(path: &Path, also: &[(&str, &[u8])], from: u64) {
        let big = "x".repeat(64 * 1024);
        for at in from..from + 20 {
            let two = format!("{big}{at}");
            let mut files = also.to_vec();
            files.push(("2.json", two.as_bytes()));
            run(path, &files, &[], at);
        }
    }

    #[test]
    fn compaction_drops_a_vanished_version_that_came_back() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"a")], &[], 1);
        run(&path, &[], &[], 2);
        // The same bytes again: a new life of 1.json, and the one found gone is history.
        run(&path, &[("1.json", b"a")], &[], 3);
        let j = journal(&path);
        assert_eq!(j.files["1.json"].len(), 2);
        let gone = crate::vanish::vanished(
            &j,
            taskproof_core::protocol::Layout::ClaudeCode,
            &crate::vanish::Folder::default(),
        );
        assert_eq!(
            gone.len(),
            1,
            "only the live one is missing from an empty folder"
        );
        grow_past_compaction(&path, &[("1.json", b"a")], 4);
        let j = journal(&path);
        assert!(j.problems.is_empty(), "{:?}", j.problems);
        let lives = &j.files["1.json"];
        assert_eq!(lives.len(), 1, "{lives:?}");
        assert!(lives[0].is_alive());
    }

    #[test]
    fn a_compaction_leaves_no_temporary_file_even_after_one_was_killed() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"a")], &[], 1);
        let dir = path.parent().unwrap();
        // What a compaction killed before its rename leaves: its temporary file.
        std::fs::write(dir.join(".l.jsonl.compact"), "half of a journal").unwrap();
        grow_past_compaction(&path, &[], 2);
        assert!(std::fs::metadata(&path).unwrap().len() < COMPACT_FROM);
        let names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["l.jsonl"]);
    }

    #[test]
    fn a_restore_marks_the_version_it_wrote_back() {
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"a")], &[], 1);
        let back = [("1.json".to_string(), b"a".to_vec())];
        record_restore(&path, "l", Path::new("/t/l"), &back, "/t/l-r", false, 5).unwrap();
        let l = journal(&path).current("1.json").unwrap().clone();
        assert_eq!(l.restored_into.as_deref(), Some("/t/l-r"));
        assert!(!l.is_alive());
        // Into the same list: the version is live again, so a later reset is found again.
        let (_tmp, path) = setup();
        run(&path, &[("1.json", b"a")], &[], 1);
        record_restore(&path, "l", Path::new("/t/l"), &back, "/t/l", true, 5).unwrap();
        let j = journal(&path);
        assert!(j.current("1.json").unwrap().is_alive());
        assert_eq!(j.files["1.json"].len(), 2);
    }
}
