//! One line of a journal: the header that names the format and the list, the entries, the
//! hash a `seen` entry carries, and the marks of a version that is not whole ([`Torn`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The journal format this taskproof writes and reads.
pub const FORMAT: u64 = 1;

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

pub(super) fn hash_text(h: u64) -> String {
    format!("{h:016x}")
}

pub(super) fn parse_hash(s: &str) -> Option<u64> {
    (s.len() == 16)
        .then(|| u64::from_str_radix(s, 16).ok())
        .flatten()
}

/// The first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Header {
    pub(super) taskproof_journal: u64,
    pub(super) list: String,
    pub(super) folder: String,
    pub(super) created: u64,
}

/// One entry as written. Field order is the line's order: the short fields first, the bytes
/// last.
#[derive(Serialize)]
pub(super) struct Out<'a> {
    pub(super) at: u64,
    pub(super) op: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) last_seen: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) into: Option<&'a str>,
    /// A `run` line's: the session id of the hook event that made the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) session: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) torn: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) hex: Option<String>,
}

impl<'a> Out<'a> {
    pub(super) fn new(at: u64, op: &'a str, file: Option<&'a str>) -> Out<'a> {
        Out {
            at,
            op,
            file,
            hash: None,
            last_seen: None,
            into: None,
            session: None,
            torn: None,
            text: None,
            hex: None,
        }
    }

    pub(super) fn line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).expect("journal entries serialize");
        v.push(b'\n');
        v
    }
}

/// A `seen` entry for `file` holding `bytes`, marked `torn` when they were not a whole task.
pub(super) fn seen_line(at: u64, file: &str, bytes: &[u8], torn: Option<Torn>) -> Vec<u8> {
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
pub(super) struct In<'a, T> {
    pub(super) at: u64,
    #[serde(borrow)]
    pub(super) op: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) file: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) hash: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) last_seen: Option<u64>,
    #[serde(default, borrow)]
    pub(super) into: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) session: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) torn: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) text: Option<T>,
    #[serde(default)]
    pub(super) hex: Option<T>,
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

    pub(super) fn parse(s: &str) -> Torn {
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
