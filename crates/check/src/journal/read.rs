//! Reading a journal into each task's life: every version seen, the last whole one, and
//! whether it vanished; the lines a reader skipped.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::*;

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
    pub(super) keep: Vec<(usize, usize)>,
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
    pub(super) fn holds(&self, h: u64) -> bool {
        self.hash == h || self.whole_before.as_ref().is_some_and(|w| w.hash == h)
    }

    /// The bytes of the journal lines a compaction keeps of this life.
    pub(super) fn kept_bytes(&self) -> usize {
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
    /// The session ids `run` lines name, each with the time of its last run.
    pub sessions: BTreeMap<String, u64>,
    /// The byte range of the header and of the last `run` line.
    pub(super) header: (usize, usize),
    pub(super) run_line: Option<(usize, usize)>,
    /// The length up to the end of the last complete line.
    pub(super) complete: usize,
}

impl Journal {
    /// The bytes a compaction keeps: the header, the lines of every life that is alive or
    /// vanished and not restored, and the last `run` line.
    pub(super) fn kept_bytes(&self) -> usize {
        let lines: usize = self.kept().map(Life::kept_bytes).sum();
        (self.header.1 - self.header.0) + lines + self.run_line.map_or(0, |(s, e)| e - s)
    }

    /// The current life of `file`, if any.
    pub fn current(&self, file: &str) -> Option<&Life> {
        self.files.get(file).and_then(|v| v.last())
    }

    /// The lives a compaction keeps: each alive, or vanished and neither restored nor back.
    pub(super) fn kept(&self) -> impl Iterator<Item = &Life> {
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
pub(super) fn read_header(path: &Path, line: &[u8], list: &str) -> Result<Header, JournalError> {
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
pub(super) fn light_prefix(line: &[u8]) -> Option<usize> {
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
pub(super) struct Unread;

impl Payload for Unread {
    fn bytes(_: Option<Self>, _: Option<Self>) -> Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
}

/// What a journal's task bytes decode as.
pub(super) trait Payload {
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

pub(super) fn decode_hex(s: &str) -> Option<Vec<u8>> {
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
pub(super) fn apply<'a, T: Deserialize<'a> + Payload>(
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
        if let Some(s) = e.session {
            j.sessions.insert(s.into_owned(), e.at);
        }
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
